package dev.elves.gateway.security;

import java.time.Instant;
import java.util.List;
import java.util.regex.Pattern;

import org.springframework.security.oauth2.core.OAuth2Error;
import org.springframework.security.oauth2.core.OAuth2TokenValidator;
import org.springframework.security.oauth2.core.OAuth2TokenValidatorResult;
import org.springframework.security.oauth2.jwt.Jwt;

/**
 * What a signed token must also say before the gateway believes it, each refusal naming the
 * claim: an expiry (a token without one would be valid for ever), the expected issuer and
 * audience ({@code elves token} and the operator sign with both), and a user id ({@code sub}) of the characters `elves token` allows, since it
 * travels into URLs, messages and rows.
 */
final class TokenRules implements OAuth2TokenValidator<Jwt> {

	/** The same rule as operator/elves/engine/planning/tokens.py (the token maker). */
	static final Pattern SUBJECT = Pattern.compile("[A-Za-z0-9._@-]{1,64}");

	private final String issuer;

	private final String audience;

	TokenRules(JwtProperties properties) {
		this.issuer = properties.issuer();
		this.audience = properties.audience();
	}

	@Override
	public OAuth2TokenValidatorResult validate(Jwt jwt) {
		Instant expires = jwt.getExpiresAt();
		if (expires == null) {
			return refuse("the token has no 'exp' (expiry) claim");
		}
		String subject = jwt.getSubject();
		if (subject == null || subject.isBlank()) {
			return refuse("the token has no 'sub' (user) claim");
		}
		if (!SUBJECT.matcher(subject).matches()) {
			return refuse("the token's 'sub' must be 1 to 64 letters, digits or . _ @ -");
		}
		// A token signed with the same key for another purpose names another issuer or audience.
		if (!this.issuer.equals(jwt.getClaimAsString("iss"))) {
			return refuse("the token's 'iss' (issuer) is not " + this.issuer);
		}
		List<String> audiences = jwt.getAudience();
		if (audiences == null || !audiences.contains(this.audience)) {
			return refuse("the token's 'aud' (audience) does not include " + this.audience);
		}
		return OAuth2TokenValidatorResult.success();
	}

	private static OAuth2TokenValidatorResult refuse(String description) {
		return OAuth2TokenValidatorResult.failure(new OAuth2Error("invalid_token", description, null));
	}

}
