package dev.elves.gateway.web;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;

/**
 * What one caller may send (environment variables in brackets).
 *
 * @param maxBody   largest request body; more is refused with 413 [ELVES_GATEWAY_MAX_BODY]
 * @param userRate  API calls per second one user may make, on average; more are refused with
 *                  429 and Retry-After [ELVES_GATEWAY_USER_RATE]; 0 (the default) = no limit, so
 *                  load tests, which share a few users, are never limited by it
 * @param userBurst calls one user may make at once above the average [ELVES_GATEWAY_USER_BURST];
 *                  0 = one second's worth
 */
@ConfigurationProperties("elves.gateway")
public record LimitProperties(@DefaultValue("16KB") DataSize maxBody, @DefaultValue("0") double userRate,
		@DefaultValue("0") int userBurst) {

	public LimitProperties {
		if (maxBody.toBytes() < 1) {
			throw new IllegalArgumentException("ELVES_GATEWAY_MAX_BODY must be at least 1 byte, got " + maxBody);
		}
		if (userRate < 0 || userBurst < 0) {
			throw new IllegalArgumentException("ELVES_GATEWAY_USER_RATE and ELVES_GATEWAY_USER_BURST must not be negative");
		}
	}

	/** The bucket size of one user. */
	int burst() {
		return (this.userBurst > 0) ? this.userBurst : (int) Math.max(1, Math.ceil(this.userRate));
	}

}
