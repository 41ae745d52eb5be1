package dev.elves.contracts.messaging;

import java.time.Duration;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * Settings every service shares for the broker (environment variables in brackets).
 *
 * @param deliveryLimit  deliveries of one message before the broker dead-letters it
 *                       [ELVES_DELIVERY_LIMIT]; a queue argument, so it applies to queues
 *                       declared after the change
 * @param confirmTimeout longest wait for the broker's publisher confirm [ELVES_CONFIRM_TIMEOUT]
 */
@ConfigurationProperties("elves.messaging")
public record MessagingProperties(@DefaultValue("10") int deliveryLimit, @DefaultValue("5s") Duration confirmTimeout) {

	public MessagingProperties {
		if (deliveryLimit < 1) {
			throw new IllegalArgumentException("ELVES_DELIVERY_LIMIT must be at least 1, got " + deliveryLimit);
		}
		if (confirmTimeout.isNegative() || confirmTimeout.isZero()) {
			throw new IllegalArgumentException("ELVES_CONFIRM_TIMEOUT must be positive, got " + confirmTimeout);
		}
	}

}
