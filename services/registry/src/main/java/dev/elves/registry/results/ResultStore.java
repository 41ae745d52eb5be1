package dev.elves.registry.results;

import java.sql.Timestamp;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;

import dev.elves.contracts.Envelope;
import dev.elves.contracts.MessageTypes;
import dev.elves.contracts.PlotOutcome;
import dev.elves.contracts.Queues;
import dev.elves.registry.duplicates.DuplicateCounter;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Transactional;

/** Applies one ingestor result: once per message id, status only forward, the PNG stored once. */
@Component
class ResultStore {

	/** What applying a result did. */
	enum Applied {

		/** The same message id was applied before. */
		DUPLICATE,
		/** Recorded; the request's status moved forward (or was already further on). */
		RECORDED,
		/** Recorded, and the request reached DONE or FAILED with it. */
		TERMINAL

	}

	private final JdbcTemplate jdbc;

	private final DuplicateCounter duplicates;

	ResultStore(JdbcTemplate jdbc, DuplicateCounter duplicates) {
		this.jdbc = jdbc;
		this.duplicates = duplicates;
	}

	@Transactional
	Applied apply(Envelope envelope, PlotOutcome outcome) {
		Instant time = Objects.requireNonNullElseGet(envelope.time(), Instant::now);
		int fresh = this.jdbc.update("""
				INSERT INTO processed_results (id, request_id, type, test_id, time) VALUES (?, ?, ?, ?, ?)
				ON CONFLICT (id) DO NOTHING
				""", envelope.id(), outcome.requestId(), envelope.type(), envelope.testId(), Timestamp.from(time));
		if (fresh == 0) {
			this.duplicates.record(Queues.REGISTRY_INGESTOR,
					Map.of(Objects.requireNonNullElse(envelope.testId(), DuplicateCounter.NO_TEST), 1));
			return Applied.DUPLICATE;
		}
		String status = statusOf(envelope.type());
		int moved = this.jdbc.update("""
				INSERT INTO requests (id, user_id, test_id, status, error, created, updated)
				VALUES (?, ?, ?, ?, ?, ?, now())
				ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, error = EXCLUDED.error, updated = now()
				WHERE status_rank(requests.status) < status_rank(EXCLUDED.status)
				""", outcome.requestId(), envelope.userId(), envelope.testId(), status, outcome.error(),
				Timestamp.from(time));
		if (MessageTypes.PLOT_COMPLETED.equals(envelope.type()) && moved > 0) {
			this.jdbc.update("INSERT INTO plots (request_id, png) VALUES (?, ?) ON CONFLICT (request_id) DO NOTHING",
					outcome.requestId(), outcome.png());
		}
		return (moved > 0 && !"PROCESSING".equals(status)) ? Applied.TERMINAL : Applied.RECORDED;
	}

	/**
	 * A data request the broker dead-lettered: FAILED with {@code error}, unless it ended already
	 * (then nothing changes, and nothing counts as a duplicate: this is no redelivery). Creates
	 * the row if its activity log has not arrived yet, as results do.
	 * @return whether the request became FAILED now
	 */
	@Transactional
	boolean failDeadLettered(Envelope request, String error) {
		Instant time = Objects.requireNonNullElseGet(request.time(), Instant::now);
		return this.jdbc.update("""
				INSERT INTO requests (id, user_id, test_id, status, error, created, updated)
				VALUES (?, ?, ?, 'FAILED', ?, ?, now())
				ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, error = EXCLUDED.error, updated = now()
				WHERE status_rank(requests.status) < status_rank(EXCLUDED.status)
				""", request.id(), request.userId(), request.testId(), error, Timestamp.from(time)) > 0;
	}

	static String statusOf(String type) {
		return switch (type) {
			case MessageTypes.PLOT_STARTED -> "PROCESSING";
			case MessageTypes.PLOT_COMPLETED -> "DONE";
			case MessageTypes.PLOT_FAILED -> "FAILED";
			default -> throw new IllegalArgumentException("not a plot result: " + type);
		};
	}

}
