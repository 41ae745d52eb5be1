package dev.elves.registry;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.LocalDate;
import java.time.LocalTime;
import java.util.Map;
import java.util.UUID;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import dev.elves.contracts.ElvesHeaders;
import dev.elves.contracts.Activity;
import dev.elves.contracts.DataRequest;
import dev.elves.contracts.Envelope;
import dev.elves.contracts.MessageTypes;
import dev.elves.contracts.PlotOutcome;
import dev.elves.contracts.Queues;
import dev.elves.contracts.ResultIds;
import dev.elves.contracts.it.ItEnvironment;
import dev.elves.contracts.messaging.EnvelopeMessageConverter;
import org.junit.jupiter.api.Test;

import org.springframework.amqp.core.AmqpAdmin;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.web.client.RestClient;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The registry against a real PostgreSQL and RabbitMQ (ELVES_IT_* variables; see README):
 * idempotency, poison messages, status order, the ledger.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
		properties = { "management.server.port=0", "elves.registry.batch-wait=20ms" })
class RegistryIT {

	private static final Duration DEADLINE = Duration.ofSeconds(30);

	private static final String SERVICE_KEY = "registry-it-service-key";

	@DynamicPropertySource
	static void infrastructure(DynamicPropertyRegistry registry) {
		ItEnvironment.registerDatabase(registry);
		ItEnvironment.registerBroker(registry);
		registry.add("elves.api.service-key", () -> SERVICE_KEY);
	}

	@LocalServerPort
	private int port;

	@Autowired
	private RabbitTemplate rabbit;

	@Autowired
	private AmqpAdmin admin;

	@Autowired
	private EnvelopeMessageConverter converter;

	private RestClient http() {
		return RestClient.builder()
			.baseUrl("http://127.0.0.1:" + this.port)
			.defaultHeader(ElvesHeaders.SERVICE_KEY, SERVICE_KEY)
			.build();
	}

	@SuppressWarnings("unchecked")
	private Map<String, Object> ledger(String testId) {
		return http().get().uri("/api/v1/ledger?testId={t}", testId).retrieve().body(Map.class);
	}

	private void send(String queue, Envelope envelope) {
		this.rabbit.send("", queue, this.converter.toMessage(envelope, new MessageProperties()));
	}

	@Test
	void theSameActivityLogDeliveredTwiceIsOneRowAndOneCountedDuplicate() {
		String testId = "it/" + UUID.randomUUID();
		Envelope log = Envelope.create(UUID.randomUUID(), MessageTypes.ACTIVITY_LOGGED, "it-user", testId,
				this.converter.tree(new Activity("getHistory", null)));

		send(Queues.REGISTRY_APPLOG, log);
		send(Queues.REGISTRY_APPLOG, log);

		await().atMost(DEADLINE).untilAsserted(() -> assertThat(ledger(testId)).containsEntry("logs", 1)
			.containsEntry("duplicates", 1)
			.containsEntry("logsByEndpoint", Map.of("getHistory", 1)));
	}

	@Test
	void poisonMessagesEndInTheDeadLetterQueueAndGoodOnesStillFlow() {
		String dlq = Queues.deadLetterQueue(Queues.REGISTRY_APPLOG);
		this.admin.purgeQueue(dlq, false);
		String testId = "it/" + UUID.randomUUID();
		for (int i = 0; i < 10; i++) {
			this.rabbit.send("", Queues.REGISTRY_APPLOG,
					new Message(("poison " + i).getBytes(StandardCharsets.UTF_8), new MessageProperties()));
		}
		send(Queues.REGISTRY_APPLOG, Envelope.create(UUID.randomUUID(), MessageTypes.ACTIVITY_LOGGED, "it-user",
				testId, this.converter.tree(new Activity("getUser", null))));

		await().atMost(DEADLINE).untilAsserted(() -> {
			assertThat(ledger(testId)).containsEntry("logs", 1);
			assertThat(this.admin.getQueueInfo(dlq).getMessageCount()).isEqualTo(10);
		});
	}

	@Test
	void aRequestGoesQueuedToDoneOnceWithItsPlotAndNeverBack() {
		String testId = "it/" + UUID.randomUUID();
		UUID requestId = UUID.randomUUID();
		DataRequest request = new DataRequest("KTLX", LocalDate.of(2024, 5, 20), LocalTime.of(10, 0),
				LocalTime.of(11, 0));
		byte[] png = { (byte) 0x89, 'P', 'N', 'G', 1, 2, 3 };
		send(Queues.REGISTRY_APPLOG, Envelope.create(requestId, MessageTypes.DATA_REQUESTED, "it-user", testId,
				this.converter.tree(request)));
		Envelope completed = result(requestId, testId, MessageTypes.PLOT_COMPLETED, PlotOutcome.completed(requestId, png));

		send(Queues.REGISTRY_INGESTOR, result(requestId, testId, MessageTypes.PLOT_STARTED, PlotOutcome.started(requestId)));
		send(Queues.REGISTRY_INGESTOR, completed);
		send(Queues.REGISTRY_INGESTOR, completed);
		// A late copy of plot.started (redelivered after the ingestor crashed) must not undo DONE.
		send(Queues.REGISTRY_INGESTOR, result(requestId, testId, MessageTypes.PLOT_STARTED, PlotOutcome.started(requestId)));

		await().atMost(DEADLINE).untilAsserted(() -> assertThat(ledger(testId)).containsEntry("requests", 1)
			.containsEntry("results", Map.of("done", 1, "failed", 0))
			.containsEntry("logs", 1)
			.containsEntry("duplicates", 2));
		assertThat(http().get().uri("/api/v1/requests/{id}", requestId).retrieve().body(Map.class))
			.containsEntry("status", "DONE")
			.containsEntry("radar", "KTLX");
		assertThat(http().get().uri("/api/v1/plots/{id}", requestId).retrieve().body(byte[].class)).isEqualTo(png);
		Integer otherUsersView = http().get()
			.uri("/api/v1/plots/{id}?user=someone-else", requestId)
			.exchange((req, res) -> res.getStatusCode().value());
		assertThat(otherUsersView).isEqualTo(404);
	}

	/** What the ingestor sends for a request that can never be plotted (or whose every attempt died). */
	@Test
	void aFailedPlotMakesTheRequestFailedWithItsReasonAndTheLedgerAddsUp() {
		String testId = "it/" + UUID.randomUUID();
		UUID requestId = UUID.randomUUID();
		send(Queues.REGISTRY_APPLOG, Envelope.create(requestId, MessageTypes.DATA_REQUESTED, "it-user", testId,
				this.converter.tree(new DataRequest("KTLX", LocalDate.of(2024, 5, 20), LocalTime.of(10, 0),
						LocalTime.of(11, 0)))));
		send(Queues.REGISTRY_INGESTOR, result(requestId, testId, MessageTypes.PLOT_FAILED,
				PlotOutcome.failed(requestId, "gave up after 10 attempts: the ingestor stopped during the last one")));

		await().atMost(DEADLINE).untilAsserted(() -> assertThat(ledger(testId)).containsEntry("requests", 1)
			.containsEntry("results", Map.of("done", 0, "failed", 1)));
		assertThat(http().get().uri("/api/v1/requests/{id}", requestId).retrieve().body(Map.class))
			.containsEntry("status", "FAILED")
			.containsEntry("error", "gave up after 10 attempts: the ingestor stopped during the last one");
	}

	/**
	 * A request given up as FAILED whose new attempt succeeds (its dead letter re-driven once the
	 * cause is fixed: elves redrive) ends DONE with its plot; a late plot.started changes nothing.
	 */
	@Test
	void aFailedRequestThatLaterSucceedsEndsDone() {
		String testId = "it/" + UUID.randomUUID();
		UUID requestId = UUID.randomUUID();
		byte[] png = { (byte) 0x89, 'P', 'N', 'G', 4, 5, 6 };
		send(Queues.REGISTRY_INGESTOR, result(requestId, testId, MessageTypes.PLOT_FAILED,
				PlotOutcome.failed(requestId, "gave up: the ingestor stopped during the last attempt")));
		await().atMost(DEADLINE).untilAsserted(() -> assertThat(ledger(testId))
			.containsEntry("results", Map.of("done", 0, "failed", 1)));

		send(Queues.REGISTRY_INGESTOR, result(requestId, testId, MessageTypes.PLOT_COMPLETED,
				PlotOutcome.completed(requestId, png)));
		send(Queues.REGISTRY_INGESTOR, result(requestId, testId, MessageTypes.PLOT_STARTED, PlotOutcome.started(requestId)));

		await().atMost(DEADLINE).untilAsserted(() -> assertThat(ledger(testId)).containsEntry("requests", 1)
			.containsEntry("results", Map.of("done", 1, "failed", 0)));
		assertThat(http().get().uri("/api/v1/requests/{id}", requestId).retrieve().body(Map.class))
			.containsEntry("status", "DONE");
		assertThat(http().get().uri("/api/v1/plots/{id}", requestId).retrieve().body(byte[].class)).isEqualTo(png);
	}

	/**
	 * A request whose every ingestor attempt died (out of memory): the broker returns it until
	 * its delivery limit and dead-letters it, and nobody sends a plot.failed. The registry's copy
	 * of the dead letter must end it FAILED, while the original stays in the DLQ.
	 */
	@Test
	void aDataRequestTheBrokerDeadLettersEndsFailedAndStaysInItsDlq() throws Exception {
		String dlq = Queues.deadLetterQueue(Queues.INGESTOR_DATA);
		this.admin.purgeQueue(Queues.INGESTOR_DATA, false);
		this.admin.purgeQueue(dlq, false);
		String testId = "it/" + UUID.randomUUID();
		UUID requestId = UUID.randomUUID();
		Envelope request = Envelope.create(requestId, MessageTypes.DATA_REQUESTED, "it-user", testId,
				this.converter.tree(new DataRequest("KTLX", LocalDate.of(2024, 5, 20), LocalTime.of(10, 0),
						LocalTime.of(11, 0))));
		// As the gateway publishes it: one message to the ingestor's queue and the activity log.
		this.rabbit.send(Queues.EXCHANGE, MessageTypes.DATA_REQUESTED,
				this.converter.toMessage(request, new MessageProperties()));

		try (Connection connection = ItEnvironment.brokerConnection("registry-it-dying-ingestor")) {
			while (this.admin.getQueueInfo(dlq).getMessageCount() == 0) {
				Channel channel = connection.createChannel();
				await().atMost(DEADLINE)
					.until(() -> channel.basicGet(Queues.INGESTOR_DATA, false) != null
							|| this.admin.getQueueInfo(dlq).getMessageCount() > 0);
				channel.close(); // unacknowledged, as when the ingestor dies: the broker counts a delivery
			}
		}

		await().atMost(DEADLINE).untilAsserted(() -> assertThat(ledger(testId)).containsEntry("requests", 1)
			.containsEntry("results", Map.of("done", 0, "failed", 1))
			.containsEntry("duplicates", 0));
		assertThat(http().get().uri("/api/v1/requests/{id}", requestId).retrieve().body(Map.class))
			.containsEntry("status", "FAILED")
			.containsEntry("radar", "KTLX")
			.hasEntrySatisfying("error", (error) -> assertThat((String) error).contains("delivery_limit"));
		assertThat(this.admin.getQueueInfo(dlq).getMessageCount()).isEqualTo(1);
	}

	@Test
	void addAppLogWritesOnceForOneIdAndTheUserAppears() {
		String testId = "it/" + UUID.randomUUID();
		String user = "it-" + UUID.randomUUID();
		String body = "{\"id\":\"" + UUID.randomUUID() + "\",\"userId\":\"" + user + "\"}";
		for (int i = 0; i < 2; i++) {
			http().post()
				.uri("/api/v1/logs")
				.header("X-Elves-Test-Id", testId)
				.header("Content-Type", "application/json")
				.body(body)
				.retrieve()
				.toBodilessEntity();
		}
		assertThat(ledger(testId)).containsEntry("logs", 1).containsEntry("logsByEndpoint", Map.of("addAppLog", 1));
		assertThat(http().get().uri("/api/v1/users/{id}", user).retrieve().body(Map.class)).containsEntry("id", user);
		assertThat(http().get().uri("/api/v1/logs?user={u}&all=true&size=1", user).retrieve().body(Map.class))
			.containsEntry("hasNext", false);
	}

	private Envelope result(UUID requestId, String testId, String type, PlotOutcome outcome) {
		return Envelope.create(ResultIds.derive(requestId, type), type, "it-user", testId, this.converter.tree(outcome));
	}

}
