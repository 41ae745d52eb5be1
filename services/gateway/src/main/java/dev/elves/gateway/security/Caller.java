package dev.elves.gateway.security;

import org.springframework.security.core.Authentication;
import org.springframework.security.oauth2.jwt.Jwt;

/** Who is calling: the token's {@code sub} and its boolean {@code admin} claim. */
public record Caller(String userId, boolean admin) {

	public static final String ADMIN_AUTHORITY = "admin";

	static final String ADMIN_CLAIM = "admin";

	/** The test id a run's token is for (operator/elves/engine/planning/tokens.py TEST_ID_CLAIM); a person's names none. */
	static final String TEST_ID_CLAIM = "testId";

	public static Caller of(Authentication authentication) {
		Jwt jwt = (Jwt) authentication.getPrincipal();
		return new Caller(jwt.getSubject(), Boolean.TRUE.equals(jwt.getClaim(ADMIN_CLAIM)));
	}

	/** The test id the token is bound to, or null when it is bound to none. */
	public static String testIdOf(Authentication authentication) {
		return ((Jwt) authentication.getPrincipal()).getClaimAsString(TEST_ID_CLAIM);
	}

}
