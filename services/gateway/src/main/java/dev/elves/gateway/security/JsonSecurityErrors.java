package dev.elves.gateway.security;

import java.io.IOException;

import dev.elves.web.ApiError;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import org.springframework.http.MediaType;
import org.springframework.security.access.AccessDeniedException;
import org.springframework.security.core.AuthenticationException;
import org.springframework.security.oauth2.server.resource.web.BearerTokenAuthenticationEntryPoint;
import org.springframework.security.web.AuthenticationEntryPoint;
import org.springframework.security.web.access.AccessDeniedHandler;
import org.springframework.security.web.firewall.RequestRejectedException;
import org.springframework.security.web.firewall.RequestRejectedHandler;

import tools.jackson.databind.json.JsonMapper;

/**
 * The security chain's refusals as JSON, like every other error: 401 (with the standard
 * WWW-Authenticate header) for a missing or bad token, 403 for a valid token without the
 * admin claim, 400 naming the path for one the firewall rejects (say, with {@code ;} or an
 * encoded {@code %}). Without that last one the rejection went to the error page, which the
 * chain guards, and a caller with a valid token was told the token was bad.
 */
class JsonSecurityErrors implements AuthenticationEntryPoint, AccessDeniedHandler, RequestRejectedHandler {

	private static final String FIELD = "Authorization";

	private final BearerTokenAuthenticationEntryPoint standard = new BearerTokenAuthenticationEntryPoint();

	private final JsonMapper mapper;

	JsonSecurityErrors(JsonMapper mapper) {
		this.mapper = mapper;
	}

	@Override
	public void commence(HttpServletRequest request, HttpServletResponse response, AuthenticationException ex)
			throws IOException {
		this.standard.commence(request, response, ex);
		String reason = (request.getHeader(FIELD) == null)
				? "missing bearer token: send 'Authorization: Bearer <token>'" : "invalid bearer token: " + ex.getMessage();
		write(response, HttpServletResponse.SC_UNAUTHORIZED, reason);
	}

	@Override
	public void handle(HttpServletRequest request, HttpServletResponse response, AccessDeniedException ex)
			throws IOException {
		write(response, HttpServletResponse.SC_FORBIDDEN, "this call needs a token with \"admin\": true");
	}

	@Override
	public void handle(HttpServletRequest request, HttpServletResponse response, RequestRejectedException ex)
			throws IOException {
		write(response, HttpServletResponse.SC_BAD_REQUEST, "the request path is not allowed: " + ex.getMessage(),
				"path");
	}

	private void write(HttpServletResponse response, int status, String error) throws IOException {
		write(response, status, error, FIELD);
	}

	private void write(HttpServletResponse response, int status, String error, String field) throws IOException {
		response.setStatus(status);
		response.setContentType(MediaType.APPLICATION_JSON_VALUE);
		this.mapper.writeValue(response.getOutputStream(), new ApiError(error, field));
	}

}
