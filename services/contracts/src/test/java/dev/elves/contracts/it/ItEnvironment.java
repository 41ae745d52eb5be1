package dev.elves.contracts.it;

import java.io.IOException;
import java.util.concurrent.TimeoutException;

import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;

import org.springframework.test.context.DynamicPropertyRegistry;

/**
 * The real broker (and database) the services' integration tests run against, named by
 * ELVES_IT_* environment variables (services/README.md); a missing one fails the test, naming it.
 * Shared by the modules' *IT classes through the contracts test jar.
 */
public final class ItEnvironment {

	private ItEnvironment() {
	}

	public static String required(String name) {
		String value = System.getenv(name);
		if (value == null || value.isBlank()) {
			throw new IllegalStateException(name + " is not set: integration tests need a real RabbitMQ and PostgreSQL"
					+ " (see services/README.md)");
		}
		return value;
	}

	/** No other registry or ingestor may consume from this virtual host while the tests run. */
	public static String virtualHost() {
		return System.getenv().getOrDefault("ELVES_IT_RABBITMQ_VHOST", "/");
	}

	public static void registerBroker(DynamicPropertyRegistry registry) {
		registry.add("spring.rabbitmq.host", () -> "127.0.0.1");
		registry.add("spring.rabbitmq.port", () -> required("ELVES_IT_RABBITMQ_PORT"));
		registry.add("spring.rabbitmq.username", () -> required("ELVES_IT_RABBITMQ_USER"));
		registry.add("spring.rabbitmq.password", () -> required("ELVES_IT_RABBITMQ_PASSWORD"));
		registry.add("spring.rabbitmq.virtual-host", ItEnvironment::virtualHost);
	}

	public static void registerDatabase(DynamicPropertyRegistry registry) {
		registry.add("spring.datasource.url", () -> required("ELVES_IT_DB_URL"));
		registry.add("spring.datasource.username", () -> required("ELVES_IT_DB_USER"));
		registry.add("spring.datasource.password", () -> required("ELVES_IT_DB_PASSWORD"));
	}

	/** A plain client connection, outside Spring's caching, for playing a consumer by hand. */
	public static Connection brokerConnection(String name) throws IOException, TimeoutException {
		ConnectionFactory factory = new ConnectionFactory();
		factory.setHost("127.0.0.1");
		factory.setPort(Integer.parseInt(required("ELVES_IT_RABBITMQ_PORT")));
		factory.setUsername(required("ELVES_IT_RABBITMQ_USER"));
		factory.setPassword(required("ELVES_IT_RABBITMQ_PASSWORD"));
		factory.setVirtualHost(virtualHost());
		return factory.newConnection(name);
	}

}
