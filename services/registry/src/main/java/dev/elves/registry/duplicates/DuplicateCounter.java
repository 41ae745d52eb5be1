package dev.elves.registry.duplicates;

import java.util.Map;

import dev.elves.contracts.MetricNames;
import dev.elves.contracts.Queues;
import io.micrometer.core.instrument.MeterRegistry;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

/**
 * Counts redelivered messages that wrote nothing, per test id and queue: in the database (in
 * the caller's transaction, for the ledger) and as a metric.
 */
@Component
public class DuplicateCounter {

	/** The duplicates table's key for messages without a test id. */
	public static final String NO_TEST = "";

	private final JdbcTemplate jdbc;

	private final MeterRegistry meters;

	DuplicateCounter(JdbcTemplate jdbc, MeterRegistry meters) {
		this.jdbc = jdbc;
		this.meters = meters;
		for (String queue : Queues.WORK_QUEUES) {
			meters.counter(MetricNames.DUPLICATES_DISCARDED, "queue", queue);
		}
	}

	/** Call inside the transaction that discarded them. */
	public void record(String queue, Map<String, Integer> countByTestId) {
		countByTestId.forEach((testId, count) -> {
			if (count > 0) {
				this.jdbc.update("""
						INSERT INTO duplicates (test_id, queue, count) VALUES (?, ?, ?)
						ON CONFLICT (test_id, queue) DO UPDATE SET count = duplicates.count + EXCLUDED.count
						""", (testId == null) ? NO_TEST : testId, queue, count);
			}
		});
	}

	/** Call after the commit. */
	public void count(String queue, int discarded) {
		if (discarded > 0) {
			this.meters.counter(MetricNames.DUPLICATES_DISCARDED, "queue", queue).increment(discarded);
		}
	}

}
