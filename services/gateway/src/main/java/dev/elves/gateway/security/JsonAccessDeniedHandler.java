package dev.elves.gateway.security;

import java.io.IOException;

import dev.elves.gateway.web.ErrorBody;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import org.springframework.security.access.AccessDeniedException;
import org.springframework.security.web.access.AccessDeniedHandler;

/** 403 with a JSON body, for a valid token that lacks the admin claim. */
class JsonAccessDeniedHandler implements AccessDeniedHandler {

	private final ErrorBody errors;

	JsonAccessDeniedHandler(ErrorBody errors) {
		this.errors = errors;
	}

	@Override
	public void handle(HttpServletRequest request, HttpServletResponse response, AccessDeniedException ex)
			throws IOException {
		this.errors.write(response, HttpServletResponse.SC_FORBIDDEN, "this call needs a token with \"admin\": true",
				"Authorization");
	}

}
