package dev.elves.gateway.registry;

import java.net.URI;
import java.time.Duration;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * Where and how patiently the gateway reads from the registry.
 *
 * @param url            the registry's base URL [ELVES_REGISTRY_URL]
 * @param connectTimeout longest wait to connect [ELVES_REGISTRY_CONNECT_TIMEOUT]
 * @param readTimeout    longest wait for an answer [ELVES_REGISTRY_READ_TIMEOUT]
 * @param serviceKey     the registry's service credential, sent on every call [ELVES_SERVICE_KEY]
 * @param maxConcurrent  calls to the registry at the same time (the bulkhead, and the size of
 *                       the keep-alive pool); reads beyond it wait, then are refused
 *                       [ELVES_REGISTRY_MAX_CONCURRENT]
 * @param queueTimeout   longest wait for a free place in the bulkhead before answering 429 with
 *                       Retry-After [ELVES_REGISTRY_QUEUE_TIMEOUT]
 */
@ConfigurationProperties("elves.registry")
public record RegistryProperties(@DefaultValue("http://127.0.0.1:8081") URI url,
		@DefaultValue("1s") Duration connectTimeout, @DefaultValue("5s") Duration readTimeout,
		@DefaultValue("") String serviceKey,
		@DefaultValue("32") int maxConcurrent, @DefaultValue("50ms") Duration queueTimeout) {

	public RegistryProperties {
		if (maxConcurrent < 1) {
			throw new IllegalArgumentException("elves.registry.max-concurrent must be at least 1, not " + maxConcurrent);
		}
	}

}
