package dev.elves.registry.logs;

import java.time.Instant;
import java.util.UUID;

/** One activity, as the history reads return it. */
record LogEntry(UUID id, String userId, String endpoint, UUID requestId, String testId, Instant time) {
}
