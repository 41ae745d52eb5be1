package dev.elves.contracts.messaging;

/**
 * The broker nacked a message: a queue it routes to is full (its {@code x-max-length} with
 * {@code reject-publish}) or could not take it. Nothing was accepted for the caller; try later.
 */
public class PublishRejectedException extends PublishFailedException {

	public PublishRejectedException(String message) {
		super(message, null);
	}

}
