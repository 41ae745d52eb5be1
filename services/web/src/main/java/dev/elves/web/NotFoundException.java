package dev.elves.web;

/** The thing asked for does not exist (or is not the caller's): 404, naming what was looked up when given. */
public class NotFoundException extends RuntimeException {

	private final String field;

	public NotFoundException(String message) {
		this(null, message);
	}

	public NotFoundException(String field, String message) {
		super(message);
		this.field = field;
	}

	public String field() {
		return this.field;
	}

}
