package dev.elves.web;

import dev.elves.contracts.ElvesHeaders;

/** Checks the optional {@code X-Elves-Test-Id} header before it is copied into messages. */
public final class TestIds {

	private TestIds() {
	}

	/** The header value, or null when absent or blank; 400 when it is too long. */
	public static String check(String header) {
		if (header == null || header.isBlank()) {
			return null;
		}
		if (header.length() > ElvesHeaders.TEST_ID_MAX_LENGTH) {
			throw new InvalidInputException(ElvesHeaders.TEST_ID, ElvesHeaders.TEST_ID + ": too long ("
					+ header.length() + " characters, at most " + ElvesHeaders.TEST_ID_MAX_LENGTH + ")");
		}
		return header;
	}

}
