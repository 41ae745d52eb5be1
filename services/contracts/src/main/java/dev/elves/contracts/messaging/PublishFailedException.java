package dev.elves.contracts.messaging;

/** The broker did not confirm a message (down, nacked, unroutable or too slow). */
public class PublishFailedException extends RuntimeException {

	public PublishFailedException(String message, Throwable cause) {
		super(message, cause);
	}

}
