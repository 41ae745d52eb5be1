package dev.elves.ingestor;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDate;
import java.time.LocalTime;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import dev.elves.contracts.DataRequest;
import dev.elves.contracts.Envelope;
import dev.elves.contracts.MessageTypes;
import dev.elves.contracts.PlotOutcome;
import dev.elves.contracts.Queues;
import dev.elves.contracts.ResultIds;
import dev.elves.contracts.it.ItEnvironment;
import dev.elves.contracts.messaging.EnvelopeMessageConverter;
import dev.elves.contracts.messaging.MessagingProperties;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.amqp.core.AmqpAdmin;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageListenerContainer;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.amqp.rabbit.listener.RabbitListenerEndpointRegistry;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The ingestor against a real RabbitMQ (ELVES_IT_RABBITMQ_* variables; see README), on a
 * virtual host where no other ingestor or registry consumes: the tests take the results off
 * {@code elves.registry.ingestor.in} themselves.
 */
@SpringBootTest(properties = { "management.server.port=0", "server.port=0",
		"spring.rabbitmq.listener.simple.auto-startup=false", "elves.ingestor.fetch-delay=0ms",
		"elves.ingestor.gates=100", "elves.ingestor.sweeps=1", "elves.ingestor.image-size=96" })
class IngestorIT {

	private static final Duration DEADLINE = Duration.ofSeconds(30);

	private static final Path SCRATCH = scratch();

	@DynamicPropertySource
	static void infrastructure(DynamicPropertyRegistry registry) {
		ItEnvironment.registerBroker(registry);
		registry.add("elves.ingestor.scratch-dir", SCRATCH::toString);
	}

	private static Path scratch() {
		try {
			return Files.createTempDirectory("elves-ingestor-it");
		}
		catch (IOException ex) {
			throw new IllegalStateException("no temporary directory for the scratch space", ex);
		}
	}

	@Autowired
	private RabbitTemplate rabbit;

	@Autowired
	private AmqpAdmin admin;

	@Autowired
	private EnvelopeMessageConverter converter;

	@Autowired
	private RabbitListenerEndpointRegistry listeners;

	@Autowired
	private MessagingProperties messaging;

	@BeforeEach
	void emptyQueues() {
		for (String queue : List.of(Queues.INGESTOR_DATA, Queues.deadLetterQueue(Queues.INGESTOR_DATA),
				Queues.REGISTRY_INGESTOR)) {
			this.admin.purgeQueue(queue, false);
		}
	}

	@AfterEach
	void stopListener() {
		listener().stop();
	}

	private MessageListenerContainer listener() {
		return this.listeners.getListenerContainer("data-requests");
	}

	private UUID sendRequest() {
		UUID id = UUID.randomUUID();
		DataRequest request = new DataRequest("KTLX", LocalDate.of(2024, 5, 20), LocalTime.of(10, 0),
				LocalTime.of(11, 0));
		Envelope envelope = Envelope.create(id, MessageTypes.DATA_REQUESTED, "it-user", "it/" + id,
				this.converter.tree(request));
		this.rabbit.send("", Queues.INGESTOR_DATA, this.converter.toMessage(envelope, new MessageProperties()));
		return id;
	}

	/** Results published so far, in order, taken off the queue. */
	private List<Envelope> drainResults(List<Envelope> seen) {
		Message message;
		while ((message = this.rabbit.receive(Queues.REGISTRY_INGESTOR)) != null) {
			seen.add(this.converter.fromMessage(message));
		}
		return seen;
	}

	private long depth(String queue) {
		return this.admin.getQueueInfo(queue).getMessageCount();
	}

	@Test
	void aRequestIsPlottedReportedAndAcknowledged() {
		UUID id = sendRequest();
		listener().start();

		List<Envelope> results = new ArrayList<>();
		await().atMost(DEADLINE).untilAsserted(() -> assertThat(drainResults(results)).extracting(Envelope::type)
			.containsExactly(MessageTypes.PLOT_STARTED, MessageTypes.PLOT_COMPLETED));
		Envelope completed = results.get(1);
		assertThat(completed.id()).isEqualTo(ResultIds.derive(id, MessageTypes.PLOT_COMPLETED));
		assertThat(this.converter.data(completed, PlotOutcome.class).png()).startsWith(0x89, 'P', 'N', 'G');
		await().atMost(DEADLINE).untilAsserted(() -> assertThat(depth(Queues.INGESTOR_DATA)).isZero());
		assertThat(SCRATCH).isEmptyDirectory();
	}

	/**
	 * What an ingestor killed by OutOfMemoryError on every attempt leaves: deliveries that end
	 * with the consumer's channel gone. The broker must still get a plot.failed for the request
	 * before the message sits in the dead-letter queue, or its status would stay QUEUED forever.
	 */
	@Test
	void aRequestWhoseEveryAttemptDiesIsReportedFailedBeforeItIsDeadLettered() throws Exception {
		UUID id = sendRequest();
		int limit = this.messaging.deliveryLimit();
		try (Connection connection = ItEnvironment.brokerConnection("ingestor-it-dying-consumer")) {
			for (int attempt = 0; attempt < limit; attempt++) {
				Channel channel = connection.createChannel();
				GetResponse delivery = await().atMost(DEADLINE)
					.until(() -> channel.basicGet(Queues.INGESTOR_DATA, false), (response) -> response != null);
				assertThat(delivery.getProps().getHeaders()).as("attempt %d", attempt)
					.containsEntry("x-delivery-count", (long) attempt);
				channel.close(); // unacknowledged: the broker takes it back, as when the process dies
			}
		}

		listener().start();

		List<Envelope> results = new ArrayList<>();
		await().atMost(DEADLINE).untilAsserted(() -> assertThat(drainResults(results)).extracting(Envelope::type)
			.containsExactly(MessageTypes.PLOT_FAILED));
		assertThat(results.get(0).id()).isEqualTo(ResultIds.derive(id, MessageTypes.PLOT_FAILED));
		assertThat(results.get(0).testId()).isEqualTo("it/" + id);
		assertThat(this.converter.data(results.get(0), PlotOutcome.class).error())
			.contains("gave up after " + limit + " attempts");
		await().atMost(DEADLINE)
			.untilAsserted(() -> assertThat(depth(Queues.deadLetterQueue(Queues.INGESTOR_DATA))).isEqualTo(1));
		assertThat(depth(Queues.INGESTOR_DATA)).isZero();
	}

}
