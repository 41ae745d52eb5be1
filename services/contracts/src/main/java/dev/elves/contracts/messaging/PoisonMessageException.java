package dev.elves.contracts.messaging;

/** A message that can never be processed, whatever the retries: it goes to the dead-letter queue. */
public class PoisonMessageException extends RuntimeException {

	public PoisonMessageException(String message) {
		super(message);
	}

}
