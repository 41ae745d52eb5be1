package dev.elves.contracts;

import java.time.Instant;
import java.util.UUID;

import tools.jackson.databind.JsonNode;

/**
 * The one JSON shape of every message on the broker.
 *
 * @param id     the idempotency key: a consumer that sees the same id twice writes nothing new
 * @param type   one of {@link MessageTypes}
 * @param time   when the producer created the message
 * @param userId the user the message is about (the token's {@code sub})
 * @param testId the load test that caused it ({@code X-Elves-Test-Id}), or null
 * @param data   the type-specific payload
 */
public record Envelope(UUID id, String type, Instant time, String userId, String testId, JsonNode data) {

	public static Envelope create(UUID id, String type, String userId, String testId, JsonNode data) {
		return new Envelope(id, type, Instant.now(), userId, testId, data);
	}

}
