package dev.elves.registry.web;

import dev.elves.web.InvalidInputException;

/**
 * The one character PostgreSQL's text type cannot hold: NUL. A value with it fails the query
 * (read or write), which the API would answer as the database being away; checked first, it is
 * the caller's mistake, named.
 */
public final class StoredText {

	private StoredText() {
	}

	public static boolean storable(String value) {
		return value == null || value.indexOf('\0') < 0;
	}

	/** The value; 400 naming {@code field} when PostgreSQL could not take it. */
	public static String check(String field, String value) {
		if (!storable(value)) {
			throw new InvalidInputException(field, field + ": must not contain the NUL character (\\u0000)");
		}
		return value;
	}

}
