package dev.elves.gateway.registry;

/**
 * Every place in the bulkhead of registry calls stayed taken for the queue timeout: the
 * gateway refuses the read at once ({@link dev.elves.gateway.overload.CapacityRefusal}) rather
 * than queueing it behind a slow registry (and the threads getData needs with it).
 */
public class RegistryBusyException extends RuntimeException {

	public RegistryBusyException(String message) {
		super(message);
	}

}
