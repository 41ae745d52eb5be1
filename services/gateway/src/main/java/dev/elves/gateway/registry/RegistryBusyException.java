package dev.elves.gateway.registry;

/**
 * Every place in the bulkhead of registry calls stayed taken for the queue timeout: the
 * gateway answers 429 with Retry-After at once, rather than queueing the read behind a slow
 * registry (and the threads getData needs with it).
 */
public class RegistryBusyException extends RuntimeException {

	public RegistryBusyException(String message) {
		super(message);
	}

}
