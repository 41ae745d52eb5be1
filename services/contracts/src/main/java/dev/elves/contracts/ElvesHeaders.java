package dev.elves.contracts;

/** HTTP headers shared by the services and the harness. */
public final class ElvesHeaders {

	/** Names the load test a request belongs to; copied into every message and row. */
	public static final String TEST_ID = "X-Elves-Test-Id";

	/** Longest test id accepted; longer values are rejected with 400. */
	public static final int TEST_ID_MAX_LENGTH = 200;

	private ElvesHeaders() {
	}

}
