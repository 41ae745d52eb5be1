package dev.elves.registry.web;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Clock;

import dev.elves.contracts.ElvesHeaders;
import dev.elves.web.ApiError;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import org.springframework.http.MediaType;
import org.springframework.web.filter.OncePerRequestFilter;

import tools.jackson.databind.json.JsonMapper;

/**
 * The registry's API is internal: every request to the API port, whatever its path, must carry
 * the service key in {@link ElvesHeaders#SERVICE_KEY}, compared in constant time, or a run
 * credential in {@link ElvesHeaders#RUN_CREDENTIAL} (what k6 runners hold instead of the key; its
 * scope is enforced after routing by {@link RunScopeInterceptor}); without either, 401 naming the
 * header. Deny by default: the filter judges no path, because a path test here would see the raw
 * URI while the router matches it decoded and without {@code ;} parameters ({@code /%61pi/v1/users}
 * and {@code /api;/v1/users} both reach getAllUsers), so any spelling the test did not foresee
 * would skip the key. Health and metrics live on the management port (a context of its own that
 * this filter is not registered in) and stay open to the probes and Prometheus; nothing on the
 * API port is meant for callers without a credential.
 */
class ServiceKeyFilter extends OncePerRequestFilter {

	/** The request attribute holding the {@link RunCredential} of a runner's call. */
	static final String RUN_CREDENTIAL = RunCredential.class.getName();

	private final byte[] key;

	private final byte[] runKey;

	private final JsonMapper mapper;

	private final Clock clock;

	ServiceKeyFilter(String key, JsonMapper mapper, Clock clock) {
		this.key = key.getBytes(StandardCharsets.UTF_8);
		this.runKey = RunCredential.signingKey(this.key);
		this.mapper = mapper;
		this.clock = clock;
	}

	@Override
	protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
			throws ServletException, IOException {
		String given = request.getHeader(ElvesHeaders.SERVICE_KEY);
		String run = request.getHeader(ElvesHeaders.RUN_CREDENTIAL);
		if (given == null && run != null) {
			try {
				request.setAttribute(RUN_CREDENTIAL,
						RunCredential.verify(run, this.runKey, this.clock.instant(), this.mapper));
			}
			catch (RunCredential.Refused ex) {
				refuse(response, ex.getMessage(), ElvesHeaders.RUN_CREDENTIAL);
				return;
			}
		}
		else if (given == null || !MessageDigest.isEqual(this.key, given.getBytes(StandardCharsets.UTF_8))) {
			refuse(response, (given == null)
					? "missing service key (or a runner's " + ElvesHeaders.RUN_CREDENTIAL
							+ "): the registry's API is internal"
					: "wrong service key", ElvesHeaders.SERVICE_KEY);
			return;
		}
		chain.doFilter(request, response);
	}

	private void refuse(HttpServletResponse response, String error, String header) throws IOException {
		response.setStatus(HttpServletResponse.SC_UNAUTHORIZED);
		response.setContentType(MediaType.APPLICATION_JSON_VALUE);
		this.mapper.writeValue(response.getOutputStream(), new ApiError(error, header));
	}

}
