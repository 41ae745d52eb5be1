package dev.elves.registry.logs;

import java.time.Instant;
import java.util.UUID;

import dev.elves.contracts.DataRequest;

/**
 * An activity log to store.
 *
 * @param id        the message id (or the caller's id for addAppLog): the idempotency key
 * @param request   for getData, the data request; its id is {@code requestId}
 */
record NewLog(UUID id, String userId, String endpoint, UUID requestId, String testId, Instant time,
		DataRequest request) {
}
