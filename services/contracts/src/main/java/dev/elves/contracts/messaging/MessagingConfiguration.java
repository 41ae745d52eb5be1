package dev.elves.contracts.messaging;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;

import dev.elves.contracts.Queues;
import dev.elves.contracts.Route;

import org.springframework.amqp.core.Binding;
import org.springframework.amqp.core.BindingBuilder;
import org.springframework.amqp.core.Declarable;
import org.springframework.amqp.core.Declarables;
import org.springframework.amqp.core.DirectExchange;
import org.springframework.amqp.core.Queue;
import org.springframework.amqp.core.QueueBuilder;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.amqp.rabbit.core.RabbitAdmin;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.PropertySource;

import tools.jackson.databind.json.JsonMapper;

/**
 * The broker topology, the JSON converter and the broker settings all three services share.
 * Every service declares the exchanges, and the queues it consumes with their dead-letter
 * queues and bindings ({@link TopologyProperties}; by default all of them). A publisher's message
 * to a queue whose consumer has never connected to the broker is unroutable: the publisher
 * learns it (a returned message) and answers 503 until then.
 */
@Configuration(proxyBeanMethods = false)
@EnableConfigurationProperties({ MessagingProperties.class, TopologyProperties.class })
@PropertySource("classpath:elves-messaging.properties")
public class MessagingConfiguration {

	@Bean
	EnvelopeMessageConverter envelopeMessageConverter(JsonMapper mapper) {
		return new EnvelopeMessageConverter(mapper);
	}

	@Bean
	Declarables elvesTopology(MessagingProperties properties, TopologyProperties topology) {
		return topology(properties.deliveryLimit(), properties.queueMaxLength(), properties.queueMaxBytes().toBytes(),
				topology::declares);
	}

	/**
	 * Declares on every (re)connection. A queue that already exists with other arguments (say an
	 * older delivery limit) is logged and kept, instead of stopping the service.
	 */
	@Bean
	RabbitAdmin amqpAdmin(ConnectionFactory connectionFactory) {
		RabbitAdmin admin = new RabbitAdmin(connectionFactory);
		admin.setIgnoreDeclarationExceptions(true);
		return admin;
	}

	/**
	 * A durable direct exchange; quorum work queues with a delivery limit and a bound (past it the
	 * broker nacks new messages: the publisher learns it was not queued, nothing is dropped
	 * silently), each dead-lettering to its own {@code <name>.dlq} through the dead-letter
	 * exchange at least once (the broker keeps a dead letter until its DLQ confirmed it; RabbitMQ
	 * 3.10 allows that only with {@code reject-publish}), which also copies the ingestor's dead
	 * letters to {@link Queues#REGISTRY_DEAD_REQUESTS}.
	 */
	public static Declarables topology(int deliveryLimit, long maxLength, long maxBytes) {
		return topology(deliveryLimit, maxLength, maxBytes, (queue) -> true);
	}

	/** The exchanges, and of the queues (with their dead-letter queues and bindings) those {@code declared}. */
	public static Declarables topology(int deliveryLimit, long maxLength, long maxBytes, Predicate<String> declared) {
		List<Declarable> declarables = new ArrayList<>();
		DirectExchange exchange = new DirectExchange(Queues.EXCHANGE, true, false);
		DirectExchange deadLetters = new DirectExchange(Queues.DEAD_LETTER_EXCHANGE, true, false);
		declarables.add(exchange);
		declarables.add(deadLetters);
		for (String name : Queues.WORK_QUEUES.stream().filter(declared).toList()) {
			String deadLetterName = Queues.deadLetterQueue(name);
			Queue queue = QueueBuilder.durable(name)
				.quorum()
				.deliveryLimit(deliveryLimit)
				.maxLength(maxLength)
				.withArgument("x-max-length-bytes", maxBytes)
				.overflow(QueueBuilder.Overflow.rejectPublish)
				.deadLetterExchange(Queues.DEAD_LETTER_EXCHANGE)
				.deadLetterRoutingKey(deadLetterName)
				.withArgument("x-dead-letter-strategy", "at-least-once")
				.build();
			Queue deadLetterQueue = QueueBuilder.durable(deadLetterName).quorum().build();
			declarables.add(queue);
			declarables.add(deadLetterQueue);
			declarables.add(BindingBuilder.bind(deadLetterQueue).to(deadLetters).with(deadLetterName));
		}
		// The registry's copy of the ingestor's dead letters: no dead-letter exchange of its own (the
		// original is in the DLQ), and a delivery limit so a copy that keeps failing is dropped.
		if (declared.test(Queues.REGISTRY_DEAD_REQUESTS)) {
			Queue deadRequests = QueueBuilder.durable(Queues.REGISTRY_DEAD_REQUESTS)
				.quorum()
				.deliveryLimit(deliveryLimit)
				.build();
			declarables.add(deadRequests);
			declarables.add(BindingBuilder.bind(deadRequests)
				.to(deadLetters)
				.with(Queues.deadLetterQueue(Queues.INGESTOR_DATA)));
		}
		for (Route route : Route.ALL) {
			for (String name : route.queues().stream().filter(declared).toList()) {
				declarables.add(new Binding(name, Binding.DestinationType.QUEUE, Queues.EXCHANGE, route.routingKey(),
						null));
			}
		}
		return new Declarables(declarables);
	}

}
