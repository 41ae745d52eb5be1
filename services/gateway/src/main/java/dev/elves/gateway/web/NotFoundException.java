package dev.elves.gateway.web;

/** The thing asked for does not exist (or is not the caller's): 404. */
public class NotFoundException extends RuntimeException {

	public NotFoundException(String message) {
		super(message);
	}

}
