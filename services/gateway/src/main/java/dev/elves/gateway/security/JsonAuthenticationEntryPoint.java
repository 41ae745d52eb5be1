package dev.elves.gateway.security;

import java.io.IOException;

import dev.elves.gateway.web.ErrorBody;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import org.springframework.security.core.AuthenticationException;
import org.springframework.security.oauth2.server.resource.web.BearerTokenAuthenticationEntryPoint;
import org.springframework.security.web.AuthenticationEntryPoint;

/** 401 with the standard WWW-Authenticate header and a JSON body saying what was wrong. */
class JsonAuthenticationEntryPoint implements AuthenticationEntryPoint {

	private final BearerTokenAuthenticationEntryPoint standard = new BearerTokenAuthenticationEntryPoint();

	private final ErrorBody errors;

	JsonAuthenticationEntryPoint(ErrorBody errors) {
		this.errors = errors;
	}

	@Override
	public void commence(HttpServletRequest request, HttpServletResponse response, AuthenticationException ex)
			throws IOException {
		this.standard.commence(request, response, ex);
		String reason = (request.getHeader("Authorization") == null)
				? "missing bearer token: send 'Authorization: Bearer <token>'" : "invalid bearer token: " + ex.getMessage();
		this.errors.write(response, HttpServletResponse.SC_UNAUTHORIZED, reason, "Authorization");
	}

}
