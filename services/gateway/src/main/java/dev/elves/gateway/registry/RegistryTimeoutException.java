package dev.elves.gateway.registry;

/** The registry did not answer in time: the gateway answers 504. */
public class RegistryTimeoutException extends RuntimeException {

	public RegistryTimeoutException(String message, Throwable cause) {
		super(message, cause);
	}

}
