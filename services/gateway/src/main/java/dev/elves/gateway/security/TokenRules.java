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
 * audience, and a user id ({@code sub}) of the characters `elves token` allows, since it
 * travels into URLs, messages and rows.
 */
final class TokenRules implements OAuth2TokenValidator<Jwt> {

	/** The same rule as operator/elves/local/tokens.py (the token maker). */
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
		// Tokens signed before issuer and audience existed carry neither; one that names
		// another issuer or audience is someone else's.
		String tokenIssuer = jwt.getClaimAsString("iss");
		if (tokenIssuer != null && !this.issuer.equals(tokenIssuer)) {
			return refuse("the token's 'iss' is not " + this.issuer);
		}
		List<String> audiences = jwt.getAudience();
		if (jwt.hasClaim("aud") && (audiences == null || !audiences.contains(this.audience))) {
			return refuse("the token's 'aud' does not include " + this.audience);
		}
		return OAuth2TokenValidatorResult.success();
	}

	private static OAuth2TokenValidatorResult refuse(String description) {
		return OAuth2TokenValidatorResult.failure(new OAuth2Error("invalid_token", description, null));
	}

}
