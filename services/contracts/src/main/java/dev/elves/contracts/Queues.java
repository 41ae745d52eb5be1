package dev.elves.contracts;

import java.util.List;

/**
 * Exchange and queue names. They must equal operator/elves/constants.py (ContractNamesTest
 * compares the two files), because the harness reads queue depths by these names.
 */
public final class Queues {

	public static final String EXCHANGE = "elves";

	/** Where rejected and over-delivered messages go, routed to {@code <queue>.dlq}. */
	public static final String DEAD_LETTER_EXCHANGE = "elves.dlx";

	public static final String DEAD_LETTER_SUFFIX = ".dlq";

	public static final String INGESTOR_DATA = "elves.ingestor.data.in";

	public static final String REGISTRY_APPLOG = "elves.registry.applog.in";

	public static final String REGISTRY_INGESTOR = "elves.registry.ingestor.in";

	public static final List<String> WORK_QUEUES = List.of(INGESTOR_DATA, REGISTRY_APPLOG, REGISTRY_INGESTOR);

	/**
	 * A copy of every data request the broker dead-letters from {@link #INGESTOR_DATA} (the
	 * original stays in its DLQ for inspection), so that the registry records it FAILED even when
	 * the ingestor died on every attempt and could not say so.
	 */
	public static final String REGISTRY_DEAD_REQUESTS = "elves.registry.deadrequests.in";

	private Queues() {
	}

	public static String deadLetterQueue(String queue) {
		return queue + DEAD_LETTER_SUFFIX;
	}

}
