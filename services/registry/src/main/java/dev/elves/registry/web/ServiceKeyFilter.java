package dev.elves.registry.web;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;

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
 * the service key in {@link ElvesHeaders#SERVICE_KEY}, compared in constant time; without it,
 * 401 naming the header. Deny by default: the filter judges no path, because a path test here
 * would see the raw URI while the router matches it decoded and without {@code ;} parameters
 * ({@code /%61pi/v1/users} and {@code /api;/v1/users} both reach getAllUsers), so any spelling
 * the test did not foresee would skip the key. Health and metrics live on the management port
 * (a context of its own that this filter is not registered in) and stay open to the probes and
 * Prometheus; nothing on the API port is meant for callers without the key.
 */
class ServiceKeyFilter extends OncePerRequestFilter {

	private final byte[] key;

	private final JsonMapper mapper;

	ServiceKeyFilter(String key, JsonMapper mapper) {
		this.key = key.getBytes(StandardCharsets.UTF_8);
		this.mapper = mapper;
	}

	@Override
	protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
			throws ServletException, IOException {
		String given = request.getHeader(ElvesHeaders.SERVICE_KEY);
		if (given == null || !MessageDigest.isEqual(this.key, given.getBytes(StandardCharsets.UTF_8))) {
			response.setStatus(HttpServletResponse.SC_UNAUTHORIZED);
			response.setContentType(MediaType.APPLICATION_JSON_VALUE);
			String error = (given == null) ? "missing service key: the registry's API is internal"
					: "wrong service key";
			this.mapper.writeValue(response.getOutputStream(), new ApiError(error, ElvesHeaders.SERVICE_KEY));
			return;
		}
		chain.doFilter(request, response);
	}

}
