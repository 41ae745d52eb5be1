package dev.elves.registry;

import java.time.Duration;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * The registry's knobs (environment variables in brackets).
 *
 * @param concurrency        consumers of the activity-log queue [ELVES_REGISTRY_CONCURRENCY]
 * @param prefetch           unacknowledged messages per consumer [ELVES_REGISTRY_PREFETCH]
 * @param batchSize          activity logs written per transaction [ELVES_REGISTRY_BATCH_SIZE]
 * @param batchWait          longest wait to fill a batch once the queue is idle [ELVES_REGISTRY_BATCH_WAIT]
 * @param resultConcurrency  consumers of the ingestor-result queue [ELVES_REGISTRY_RESULT_CONCURRENCY]
 * @param resultPrefetch     unacknowledged results per consumer (each carries a PNG) [ELVES_REGISTRY_RESULT_PREFETCH]
 * @param retryTimeout       how long a consumer retries while the database is away before it
 *                           returns the messages to the queue (one delivery attempt each); keep
 *                           it under the broker's consumer timeout [ELVES_REGISTRY_RETRY_TIMEOUT]
 * @param migrationRetry     pause between schema migration attempts at start-up [ELVES_REGISTRY_MIGRATION_RETRY]
 */
@ConfigurationProperties("elves.registry")
public record RegistryProperties(@DefaultValue("2") int concurrency, @DefaultValue("250") int prefetch,
		@DefaultValue("100") int batchSize, @DefaultValue("50ms") Duration batchWait,
		@DefaultValue("2") int resultConcurrency, @DefaultValue("5") int resultPrefetch,
		@DefaultValue("25m") Duration retryTimeout, @DefaultValue("2s") Duration migrationRetry) {

	public RegistryProperties {
		if (concurrency < 1 || resultConcurrency < 1) {
			throw new IllegalArgumentException("ELVES_REGISTRY_CONCURRENCY and ELVES_REGISTRY_RESULT_CONCURRENCY must be at least 1");
		}
		if (batchSize < 1 || prefetch < batchSize) {
			throw new IllegalArgumentException("ELVES_REGISTRY_PREFETCH (" + prefetch
					+ ") must be at least ELVES_REGISTRY_BATCH_SIZE (" + batchSize + "), which must be at least 1");
		}
		if (resultPrefetch < 1) {
			throw new IllegalArgumentException("ELVES_REGISTRY_RESULT_PREFETCH must be at least 1");
		}
	}

}
