package dev.elves.registry.ledger;

import java.util.Map;
import java.util.TreeMap;

import dev.elves.registry.web.StoredText;
import dev.elves.web.InvalidInputException;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * What one test left in the database, counted exactly: requests, terminal results, activity logs
 * per endpoint and discarded duplicates. The harness compares it with what k6 sent.
 */
@RestController
class LedgerController {

	record Results(long done, long failed) {
	}

	record Ledger(String testId, long requests, Results results, long logs, Map<String, Long> logsByEndpoint,
			long duplicates) {
	}

	private final JdbcTemplate jdbc;

	LedgerController(JdbcTemplate jdbc) {
		this.jdbc = jdbc;
	}

	@GetMapping("/api/v1/ledger")
	@Transactional(readOnly = true)
	public Ledger ledger(@RequestParam String testId) {
		if (testId.isBlank()) {
			throw new InvalidInputException("testId", "testId: required");
		}
		StoredText.check("testId", testId);
		Map<String, Long> byStatus = new TreeMap<>();
		this.jdbc.query("SELECT status, count(*) FROM requests WHERE test_id = ? GROUP BY status",
				(row) -> { byStatus.put(row.getString(1), row.getLong(2)); }, testId);
		Map<String, Long> byEndpoint = new TreeMap<>();
		this.jdbc.query("SELECT endpoint, count(*) FROM activity_logs WHERE test_id = ? GROUP BY endpoint",
				(row) -> { byEndpoint.put(row.getString(1), row.getLong(2)); }, testId);
		Long duplicates = this.jdbc.queryForObject(
				"SELECT COALESCE(sum(count), 0) FROM duplicates WHERE test_id = ?", Long.class, testId);
		long requests = byStatus.values().stream().mapToLong(Long::longValue).sum();
		long logs = byEndpoint.values().stream().mapToLong(Long::longValue).sum();
		return new Ledger(testId, requests,
				new Results(byStatus.getOrDefault("DONE", 0L), byStatus.getOrDefault("FAILED", 0L)), logs, byEndpoint,
				(duplicates != null) ? duplicates : 0);
	}

}
