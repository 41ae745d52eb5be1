package dev.elves.gateway.registry;

/** The registry could not be reached or answered with an error: the gateway answers 503. */
public class RegistryUnavailableException extends RuntimeException {

	public RegistryUnavailableException(String message, Throwable cause) {
		super(message, cause);
	}

}
