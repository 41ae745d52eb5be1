package dev.elves.registry.logs;

import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import dev.elves.contracts.ElvesHeaders;
import dev.elves.contracts.MetricNames;
import dev.elves.registry.web.Page;
import dev.elves.registry.web.RunScope;
import dev.elves.registry.web.StoredText;
import dev.elves.web.InvalidInputException;
import dev.elves.web.Paging;
import dev.elves.web.TestIds;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;

import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/** addAppLog and getAppLog: the registry's own log API (the registry-mix scenario calls it directly). */
@RestController
class LogController {

	static final String ADD_APP_LOG = "addAppLog";

	static final int DEFAULT_LIMIT = 20;

	static final int MAX_LIMIT = 100;

	/** The queue-less path has its own duplicates key, so the ledger can tell them apart. */
	static final String HTTP_SOURCE = "http";

	private final LogStore store;

	private final LogQueries queries;

	private final Counter persisted;

	LogController(LogStore store, LogQueries queries, MeterRegistry meters) {
		this.store = store;
		this.queries = queries;
		this.persisted = meters.counter(MetricNames.LOGS_PERSISTED);
	}

	/**
	 * The body of addAppLog.
	 * @param id       optional: a caller that retries sends the same id and gets no second row
	 * @param endpoint optional: defaults to addAppLog
	 */
	record AppLog(UUID id, String userId, String endpoint, UUID requestId) {
	}

	@RunScope(value = RunScope.LOGS_WRITE, testId = RunScope.TestIdIn.HEADER)
	// produces: an Accept it cannot answer is refused (406) before the log is stored, never after.
	@PostMapping(path = "/api/v1/logs", consumes = MediaType.APPLICATION_JSON_VALUE,
			produces = MediaType.APPLICATION_JSON_VALUE)
	ResponseEntity<Map<String, Object>> addAppLog(@RequestBody AppLog body,
			@RequestHeader(name = ElvesHeaders.TEST_ID, required = false) String testId) {
		String userId = text("userId", body.userId());
		String endpoint = text("endpoint", (body.endpoint() != null) ? body.endpoint() : ADD_APP_LOG);
		String test = TestIds.check(testId);
		UUID id = (body.id() != null) ? body.id() : UUID.randomUUID();
		LogStore.Saved saved = this.store.save(
				List.of(new NewLog(id, userId, endpoint, body.requestId(), test, Instant.now(), null)), HTTP_SOURCE);
		this.persisted.increment(saved.inserted());
		HttpStatus status = (saved.inserted() == 1) ? HttpStatus.CREATED : HttpStatus.OK;
		return ResponseEntity.status(status).body(Map.of("id", id, "duplicate", saved.inserted() == 0));
	}

	/** The latest {@code limit} of a user's activities, or with {@code all=true} all of them, paged. */
	@RunScope(RunScope.LOGS_READ)
	@GetMapping(path = "/api/v1/logs", produces = MediaType.APPLICATION_JSON_VALUE)
	Object getAppLog(@RequestParam String user, @RequestParam(defaultValue = "" + DEFAULT_LIMIT) int limit,
			@RequestParam(defaultValue = "false") boolean all, @RequestParam(defaultValue = "0") int page,
			@RequestParam(defaultValue = "100") int size) {
		text("user", user);
		if (all) {
			Paging paging = new Paging(page, size);
			return Page.of(paging, this.queries.newest(user, paging.size() + 1, paging.offset()));
		}
		if (limit < 1 || limit > MAX_LIMIT) {
			throw new InvalidInputException("limit", "limit: must be between 1 and " + MAX_LIMIT);
		}
		return Map.of("user", user, "items", this.queries.newest(user, limit, 0));
	}

	private static String text(String field, String value) {
		if (value == null || value.isBlank()) {
			throw new InvalidInputException(field, field + ": required");
		}
		if (value.length() > LogBatchListener.MAX_TEXT) {
			throw new InvalidInputException(field, field + ": too long (" + value.length() + " characters, at most "
					+ LogBatchListener.MAX_TEXT + ")");
		}
		return StoredText.check(field, value);
	}

}
