package dev.elves.gateway.security;

import java.nio.charset.StandardCharsets;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * @param secret   the HS256 key as text, used as its UTF-8 bytes [ELVES_JWT_SECRET]; at least
 *                 32 bytes, the minimum HS256 allows
 * @param issuer   the {@code iss} every token must carry [ELVES_JWT_ISSUER]; `elves token` and
 *                 the operator sign with the same default
 * @param audience a value the token's {@code aud} must contain [ELVES_JWT_AUDIENCE]
 */
@ConfigurationProperties("elves.jwt")
public record JwtProperties(String secret, @DefaultValue("elves") String issuer,
		@DefaultValue("elves-gateway") String audience) {

	static final int MIN_SECRET_BYTES = 32;

	public JwtProperties {
		if (secret == null || secret.isBlank()) {
			throw new IllegalArgumentException("ELVES_JWT_SECRET is not set: the gateway cannot check tokens without it");
		}
		int length = secret.getBytes(StandardCharsets.UTF_8).length;
		if (length < MIN_SECRET_BYTES) {
			throw new IllegalArgumentException("ELVES_JWT_SECRET has " + length + " bytes; HS256 needs at least "
					+ MIN_SECRET_BYTES);
		}
		if (issuer == null || issuer.isBlank() || audience == null || audience.isBlank()) {
			throw new IllegalArgumentException("ELVES_JWT_ISSUER and ELVES_JWT_AUDIENCE must not be empty");
		}
	}

}
