package dev.elves.contracts;

/** HTTP headers shared by the services and the harness. */
public final class ElvesHeaders {

	/** Names the load test a request belongs to; copied into every message and row. */
	public static final String TEST_ID = "X-Elves-Test-Id";

	/** Longest test id accepted; longer values are rejected with 400. */
	public static final int TEST_ID_MAX_LENGTH = 200;

	/**
	 * The registry's service credential: the shared secret that the gateway and the harness
	 * send and the registry checks on every API call (not on the management port).
	 */
	public static final String SERVICE_KEY = "X-Elves-Service-Key";

	/**
	 * What a k6 runner sends to the registry instead of the service key: a credential for its
	 * own test id and the length of its run, signed by the harness.
	 */
	public static final String RUN_CREDENTIAL = "X-Elves-Run-Credential";

	private ElvesHeaders() {
	}

}
