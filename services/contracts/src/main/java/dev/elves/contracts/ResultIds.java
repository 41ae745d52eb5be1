package dev.elves.contracts;

import java.nio.charset.StandardCharsets;
import java.util.UUID;

/**
 * Message ids of the ingestor's results, derived from the request id. A redelivered request
 * therefore produces results with the same ids, and the registry discards the copies.
 */
public final class ResultIds {

	private ResultIds() {
	}

	public static UUID derive(UUID requestId, String resultType) {
		return UUID.nameUUIDFromBytes((requestId + "/" + resultType).getBytes(StandardCharsets.UTF_8));
	}

}
