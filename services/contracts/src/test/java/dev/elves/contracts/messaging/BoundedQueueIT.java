package dev.elves.contracts.messaging;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import dev.elves.contracts.Envelope;
import dev.elves.contracts.Queues;
import dev.elves.contracts.Route;
import dev.elves.contracts.it.ItEnvironment;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.amqp.core.Binding;
import org.springframework.amqp.core.DirectExchange;
import org.springframework.amqp.core.QueueBuilder;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;
import org.springframework.amqp.rabbit.core.RabbitAdmin;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.util.unit.DataSize;

import tools.jackson.databind.json.JsonMapper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * On the real broker (RabbitMQ 3.10 here): a full quorum queue with {@code reject-publish}
 * nacks a publish, the publisher says so ({@link PublishRejectedException}: the gateway's 503),
 * and {@link ConfirmedPublisher#publishPatiently} waits for room instead of failing at once.
 */
class BoundedQueueIT {

	private static final String QUEUE = "elves.it.bounded." + UUID.randomUUID();

	private static final Route ROUTE = new Route(QUEUE, List.of(QUEUE));

	private CachingConnectionFactory connections;

	private RabbitAdmin admin;

	private ConfirmedPublisher publisher;

	@BeforeEach
	void declareAQueueOfTwo() {
		this.connections = new CachingConnectionFactory("127.0.0.1",
				Integer.parseInt(ItEnvironment.required("ELVES_IT_RABBITMQ_PORT")));
		this.connections.setUsername(ItEnvironment.required("ELVES_IT_RABBITMQ_USER"));
		this.connections.setPassword(ItEnvironment.required("ELVES_IT_RABBITMQ_PASSWORD"));
		this.connections.setVirtualHost(ItEnvironment.virtualHost());
		this.connections.setPublisherConfirmType(CachingConnectionFactory.ConfirmType.CORRELATED);
		this.connections.setPublisherReturns(true);
		this.admin = new RabbitAdmin(this.connections);
		this.admin.declareExchange(new DirectExchange(Queues.EXCHANGE, true, false));
		this.admin.declareQueue(QueueBuilder.durable(QUEUE)
			.quorum()
			.maxLength(2)
			.overflow(QueueBuilder.Overflow.rejectPublish)
			.build());
		this.admin.declareBinding(new Binding(QUEUE, Binding.DestinationType.QUEUE, Queues.EXCHANGE, QUEUE, null));
		RabbitTemplate template = new RabbitTemplate(this.connections);
		template.setMandatory(true);
		template.setMessageConverter(new EnvelopeMessageConverter(JsonMapper.builder().build()));
		MessagingProperties properties = new MessagingProperties(10, Duration.ofSeconds(5), 2, DataSize.ofMegabytes(1),
				Duration.ofSeconds(20));
		this.publisher = new ConfirmedPublisher(template, properties, new SimpleMeterRegistry());
	}

	@AfterEach
	void deleteIt() {
		this.admin.deleteQueue(QUEUE);
		this.connections.destroy();
	}

	private static Envelope envelope() {
		return Envelope.create(UUID.randomUUID(), "it.test", "alice", null, null);
	}

	@Test
	void aFullQueueRefusesThePublishAndAPatientPublisherWaitsForRoom() throws Exception {
		this.publisher.publish(ROUTE, envelope());
		this.publisher.publish(ROUTE, envelope());
		assertThatThrownBy(() -> this.publisher.publish(ROUTE, envelope()))
			.isInstanceOf(PublishRejectedException.class);

		CompletableFuture<Void> patient = CompletableFuture.runAsync(() -> {
			try {
				this.publisher.publishPatiently(ROUTE, envelope());
			}
			catch (InterruptedException ex) {
				throw new IllegalStateException(ex);
			}
		});
		// The patient publisher is still waiting, then a consumer takes one and it gets in.
		assertThat(patient).isNotCompleted();
		try (Connection connection = ItEnvironment.brokerConnection("bounded-queue-it")) {
			Channel channel = connection.createChannel();
			assertThat(channel.basicGet(QUEUE, true)).isNotNull();
		}
		patient.get(20, TimeUnit.SECONDS);
		assertThat(this.admin.getQueueInfo(QUEUE).getMessageCount()).isEqualTo(2);
	}

}
