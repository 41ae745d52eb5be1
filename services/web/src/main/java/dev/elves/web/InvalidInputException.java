package dev.elves.web;

/** Bad input from the caller: answered with 400 naming the field. */
public class InvalidInputException extends RuntimeException {

	private final String field;

	public InvalidInputException(String field, String message) {
		super(message);
		this.field = field;
	}

	public String field() {
		return this.field;
	}

}
