package dev.elves.contracts;

/**
 * Names of the counters the harness relies on (Micrometer names; Prometheus adds
 * {@code _total} or {@code _seconds}). docs/architecture.md and services/README.md list them.
 */
public final class MetricNames {

	/** gateway, tag {@code endpoint}: 2xx answers. */
	public static final String REQUESTS_ACCEPTED = "elves.gateway.requests.accepted";

	/** Gateway: requests refused at once (503, Retry-After) because a bulkhead was full; tag {@code bulkhead}. */
	public static final String REQUESTS_REFUSED = "elves.gateway.requests.refused";

	/** gateway and ingestor, tag {@code queue}: messages handed to the broker. */
	public static final String MESSAGES_PUBLISHED = "elves.messages.published";

	/** gateway and ingestor, tag {@code queue}: messages the broker confirmed. */
	public static final String MESSAGES_CONFIRMED = "elves.messages.confirmed";

	/** registry, tag {@code status} (DONE, FAILED): terminal results stored. */
	public static final String RESULTS_PERSISTED = "elves.registry.results.persisted";

	/** registry: activity logs stored. */
	public static final String LOGS_PERSISTED = "elves.registry.logs.persisted";

	/** registry, tag {@code queue}: redelivered messages whose id was already stored. */
	public static final String DUPLICATES_DISCARDED = "elves.duplicates.discarded";

	/** every consumer, tag {@code queue}: messages it rejected to the dead-letter queue. */
	public static final String DEAD_LETTERED = "elves.messages.dead.lettered";

	/**
	 * every consumer, tag {@code queue}: deliveries it returned to the queue for another try,
	 * each one spending one of the message's delivery limit.
	 */
	public static final String RETURNED = "elves.messages.returned";

	/** ingestor, tag {@code outcome}: time from taking a job to its confirmed result. */
	public static final String INGESTOR_JOB = "elves.ingestor.job";

	private MetricNames() {
	}

}
