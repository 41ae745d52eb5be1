package dev.elves.registry.web;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;

/**
 * Who may call the registry's API and how much they may send (environment variables in brackets).
 *
 * @param serviceKey the shared secret every API call must carry in {@code X-Elves-Service-Key}
 *                   [ELVES_SERVICE_KEY], required; the gateway and the harness hold it
 * @param maxBody    largest request body; more is refused with 413 [ELVES_REGISTRY_MAX_BODY]
 */
@ConfigurationProperties("elves.api")
public record ApiProperties(String serviceKey, @DefaultValue("16KB") DataSize maxBody) {

	/** Shorter keys are guessable; `deployments.sh` and the chart generate 48 characters. */
	static final int MIN_KEY_LENGTH = 16;

	public ApiProperties {
		if (serviceKey == null || serviceKey.isBlank()) {
			throw new IllegalArgumentException("ELVES_SERVICE_KEY is not set: the registry's API is internal and "
					+ "answers only callers with the service key (the chart's Secret, the local .elves/secrets/service-key)");
		}
		if (serviceKey.length() < MIN_KEY_LENGTH) {
			throw new IllegalArgumentException("ELVES_SERVICE_KEY has " + serviceKey.length()
					+ " characters; use at least " + MIN_KEY_LENGTH);
		}
		if (maxBody.toBytes() < 1) {
			throw new IllegalArgumentException("ELVES_REGISTRY_MAX_BODY must be at least 1 byte, got " + maxBody);
		}
	}

}
