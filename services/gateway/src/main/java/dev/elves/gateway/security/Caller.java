package dev.elves.gateway.security;

import org.springframework.security.core.Authentication;
import org.springframework.security.oauth2.jwt.Jwt;

/** Who is calling: the token's {@code sub} and its boolean {@code admin} claim. */
public record Caller(String userId, boolean admin) {

	public static final String ADMIN_AUTHORITY = "admin";

	static final String ADMIN_CLAIM = "admin";

	public static Caller of(Authentication authentication) {
		Jwt jwt = (Jwt) authentication.getPrincipal();
		return new Caller(jwt.getSubject(), Boolean.TRUE.equals(jwt.getClaim(ADMIN_CLAIM)));
	}

}
