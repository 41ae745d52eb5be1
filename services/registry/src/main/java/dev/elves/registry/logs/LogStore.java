package dev.elves.registry.logs;

import java.sql.Array;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.function.Function;
import java.util.stream.Collectors;

import dev.elves.registry.duplicates.DuplicateCounter;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Transactional;

/**
 * Writes activity logs in batches: one statement per table per batch (arrays unnested in SQL),
 * one transaction, and the ids that were already there reported as duplicates.
 */
@Component
class LogStore {

	private final JdbcTemplate jdbc;

	private final DuplicateCounter duplicates;

	LogStore(JdbcTemplate jdbc, DuplicateCounter duplicates) {
		this.jdbc = jdbc;
		this.duplicates = duplicates;
	}

	/** What one batch did. */
	record Saved(int inserted, int duplicates) {
	}

	@Transactional
	Saved save(List<NewLog> batch, String queue) {
		List<NewLog> logs = distinctById(batch);
		Set<UUID> inserted = new HashSet<>(insertLogs(logs));
		List<NewLog> fresh = logs.stream().filter((log) -> inserted.contains(log.id())).toList();
		insertUsers(fresh);
		insertRequests(fresh.stream().filter((log) -> log.request() != null).toList());
		Map<String, Integer> duplicateCounts = new HashMap<>();
		for (NewLog log : batch) {
			if (!inserted.remove(log.id())) {
				duplicateCounts.merge(Objects.requireNonNullElse(log.testId(), DuplicateCounter.NO_TEST), 1,
						Integer::sum);
			}
		}
		this.duplicates.record(queue, duplicateCounts);
		return new Saved(fresh.size(), batch.size() - fresh.size());
	}

	private List<UUID> insertLogs(List<NewLog> logs) {
		return this.jdbc.query((connection) -> {
			var statement = connection.prepareStatement("""
					INSERT INTO activity_logs (id, user_id, endpoint, request_id, test_id, time)
					SELECT id::uuid, user_id, endpoint, request_id::uuid, test_id, time::timestamptz
					FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[])
					    AS t(id, user_id, endpoint, request_id, test_id, time)
					ON CONFLICT (id) DO NOTHING
					RETURNING id
					""");
			statement.setArray(1, texts(connection, logs, NewLog::id));
			statement.setArray(2, texts(connection, logs, NewLog::userId));
			statement.setArray(3, texts(connection, logs, NewLog::endpoint));
			statement.setArray(4, texts(connection, logs, NewLog::requestId));
			statement.setArray(5, texts(connection, logs, NewLog::testId));
			statement.setArray(6, texts(connection, logs, NewLog::time));
			return statement;
		}, (row, n) -> row.getObject(1, UUID.class));
	}

	/** A user exists from their first activity on. Sorted, so concurrent batches lock in one order. */
	private void insertUsers(List<NewLog> logs) {
		if (logs.isEmpty()) {
			return;
		}
		List<NewLog> firstPerUser = logs.stream()
			.collect(Collectors.toMap(NewLog::userId, Function.identity(),
					(a, b) -> a.time().isBefore(b.time()) ? a : b))
			.values()
			.stream()
			.sorted(Comparator.comparing(NewLog::userId))
			.toList();
		this.jdbc.update((connection) -> {
			var statement = connection.prepareStatement("""
					INSERT INTO users (id, first_seen)
					SELECT id, first_seen::timestamptz FROM unnest(?::text[], ?::text[]) AS t(id, first_seen)
					ON CONFLICT (id) DO NOTHING
					""");
			statement.setArray(1, texts(connection, firstPerUser, NewLog::userId));
			statement.setArray(2, texts(connection, firstPerUser, NewLog::time));
			return statement;
		});
	}

	/**
	 * The getData log creates the request (QUEUED). The ingestor's result may have come first
	 * and created the row with a later status: then only the request's details are filled in.
	 */
	private void insertRequests(List<NewLog> logs) {
		if (logs.isEmpty()) {
			return;
		}
		List<NewLog> sorted = logs.stream().sorted(Comparator.comparing(NewLog::requestId)).toList();
		this.jdbc.update((connection) -> {
			var statement = connection.prepareStatement("""
					INSERT INTO requests (id, user_id, test_id, radar, day, start_time, end_time, status, created)
					SELECT id::uuid, user_id, test_id, radar, day::date, start_time::time, end_time::time, 'QUEUED',
					       created::timestamptz
					FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[])
					    AS t(id, user_id, test_id, radar, day, start_time, end_time, created)
					ON CONFLICT (id) DO UPDATE SET radar = EXCLUDED.radar, day = EXCLUDED.day,
					    start_time = EXCLUDED.start_time, end_time = EXCLUDED.end_time,
					    user_id = COALESCE(requests.user_id, EXCLUDED.user_id),
					    test_id = COALESCE(requests.test_id, EXCLUDED.test_id), created = EXCLUDED.created
					WHERE requests.radar IS NULL
					""");
			statement.setArray(1, texts(connection, sorted, NewLog::requestId));
			statement.setArray(2, texts(connection, sorted, NewLog::userId));
			statement.setArray(3, texts(connection, sorted, NewLog::testId));
			statement.setArray(4, texts(connection, sorted, (log) -> log.request().radar()));
			statement.setArray(5, texts(connection, sorted, (log) -> log.request().date()));
			statement.setArray(6, texts(connection, sorted, (log) -> log.request().start()));
			statement.setArray(7, texts(connection, sorted, (log) -> log.request().end()));
			statement.setArray(8, texts(connection, sorted, NewLog::time));
			return statement;
		});
	}

	private static List<NewLog> distinctById(List<NewLog> batch) {
		Map<UUID, NewLog> byId = new java.util.LinkedHashMap<>();
		batch.forEach((log) -> byId.putIfAbsent(log.id(), log));
		return List.copyOf(byId.values());
	}

	private static Array texts(Connection connection, List<NewLog> logs, Function<NewLog, Object> column)
			throws SQLException {
		Object[] values = logs.stream().map(column).map((value) -> (value != null) ? value.toString() : null).toArray();
		return connection.createArrayOf("text", values);
	}

}
