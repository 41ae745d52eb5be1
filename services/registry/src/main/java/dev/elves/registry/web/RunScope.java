package dev.elves.registry.web;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks an API method a k6 runner may call with its run credential: the scope the credential must
 * grant, and where the call names a test id, which must be the credential's. A method without it
 * answers run credentials 403 (deny by default); the service key may call everything.
 */
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.METHOD)
public @interface RunScope {

	/** Write activity logs, under the credential's test id only. */
	String LOGS_WRITE = "logs:write";

	/** Read users' activity logs (getAppLog). */
	String LOGS_READ = "logs:read";

	/** Read users (getUser, getAllUsers). */
	String USERS_READ = "users:read";

	/** Read the ledger of the credential's test id only. */
	String LEDGER_READ = "ledger:read";

	/** The scope the credential must grant. */
	String value();

	/** Where this call names its test id; it must be the credential's. */
	TestIdIn testId() default TestIdIn.NONE;

	enum TestIdIn {

		/** The call names no test. */
		NONE,
		/** The X-Elves-Test-Id header (required with a run credential). */
		HEADER,
		/** The {@code testId} query parameter. */
		PARAMETER

	}

}
