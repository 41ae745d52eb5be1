package dev.elves.contracts.messaging;

import java.time.Duration;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;

/**
 * Settings every service shares for the broker (environment variables in brackets). The queue
 * settings are queue arguments: they apply to queues declared after the change (a queue that
 * exists with other arguments is kept, and the service logs the mismatch).
 *
 * @param deliveryLimit   deliveries of one message before the broker dead-letters it
 *                        [ELVES_DELIVERY_LIMIT]
 * @param confirmTimeout  longest wait for the broker's publisher confirm [ELVES_CONFIRM_TIMEOUT]
 * @param queueMaxLength  messages a work queue holds at most; past it the broker refuses (nacks)
 *                        new ones, and the gateway answers 503 [ELVES_QUEUE_MAX_LENGTH]
 * @param queueMaxBytes   bytes of message bodies a work queue holds at most, likewise
 *                        [ELVES_QUEUE_MAX_BYTES]
 * @param publishPatience how long a consumer that must publish (the ingestor's results) keeps
 *                        retrying a refused publish in place before it returns its delivery to
 *                        the queue, which costs one of the delivery limit [ELVES_PUBLISH_PATIENCE]
 */
@ConfigurationProperties("elves.messaging")
public record MessagingProperties(@DefaultValue("10") int deliveryLimit, @DefaultValue("5s") Duration confirmTimeout,
		@DefaultValue("1000000") long queueMaxLength, @DefaultValue("1GB") DataSize queueMaxBytes,
		@DefaultValue("5m") Duration publishPatience) {

	public MessagingProperties {
		if (deliveryLimit < 1) {
			throw new IllegalArgumentException("ELVES_DELIVERY_LIMIT must be at least 1, got " + deliveryLimit);
		}
		if (confirmTimeout.isNegative() || confirmTimeout.isZero()) {
			throw new IllegalArgumentException("ELVES_CONFIRM_TIMEOUT must be positive, got " + confirmTimeout);
		}
		if (queueMaxLength < 1 || queueMaxBytes.toBytes() < 1) {
			throw new IllegalArgumentException("ELVES_QUEUE_MAX_LENGTH and ELVES_QUEUE_MAX_BYTES must be positive");
		}
		if (publishPatience.isNegative()) {
			throw new IllegalArgumentException("ELVES_PUBLISH_PATIENCE must not be negative, got " + publishPatience);
		}
	}

	/**
	 * The defaults with another delivery limit and confirm timeout (tests; a factory, not a second
	 * constructor, which would keep Spring from binding the record).
	 */
	public static MessagingProperties of(int deliveryLimit, Duration confirmTimeout) {
		return new MessagingProperties(deliveryLimit, confirmTimeout, 1_000_000, DataSize.ofGigabytes(1),
				Duration.ofMinutes(5));
	}

}
