package dev.elves.web;

import java.util.regex.Pattern;

import dev.elves.contracts.ElvesHeaders;

/** Checks the optional {@code X-Elves-Test-Id} header before it is copied into messages. */
public final class TestIds {

	/**
	 * What a test id is made of: {@code <namespace>/<loadtest>/<run>} uses Kubernetes names, and
	 * tests add {@code _ : @ +}. Nothing that could split a log line, a label or a query.
	 */
	private static final Pattern ALLOWED = Pattern.compile("[A-Za-z0-9._:/@+-]+");

	private TestIds() {
	}

	/** The header value, or null when absent or blank; 400 when it is too long or has other characters. */
	public static String check(String header) {
		if (header == null || header.isBlank()) {
			return null;
		}
		if (header.length() > ElvesHeaders.TEST_ID_MAX_LENGTH) {
			throw new InvalidInputException(ElvesHeaders.TEST_ID, ElvesHeaders.TEST_ID + ": too long ("
					+ header.length() + " characters, at most " + ElvesHeaders.TEST_ID_MAX_LENGTH + ")");
		}
		if (!ALLOWED.matcher(header).matches()) {
			throw new InvalidInputException(ElvesHeaders.TEST_ID, ElvesHeaders.TEST_ID
					+ ": use only letters, digits and . _ : / @ + - (like local/quickstart/0)");
		}
		return header;
	}

}
