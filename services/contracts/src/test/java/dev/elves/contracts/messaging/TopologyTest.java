package dev.elves.contracts.messaging;

import java.util.List;

import dev.elves.contracts.Queues;
import org.junit.jupiter.api.Test;

import org.springframework.amqp.core.Binding;
import org.springframework.amqp.core.Queue;

import static org.assertj.core.api.Assertions.assertThat;

class TopologyTest {

	private final org.springframework.amqp.core.Declarables topology = MessagingConfiguration.topology(7, 1000, 5000L);

	@Test
	void workQueuesAreBoundedQuorumQueuesWithADeliveryLimitAndTheirOwnAtLeastOnceDeadLetterQueue() {
		for (String name : Queues.WORK_QUEUES) {
			Queue queue = queue(name);
			assertThat(queue.isDurable()).isTrue();
			assertThat(queue.getArguments()).containsEntry("x-queue-type", "quorum")
				.containsEntry("x-delivery-limit", 7)
				.containsEntry("x-dead-letter-exchange", Queues.DEAD_LETTER_EXCHANGE)
				.containsEntry("x-dead-letter-routing-key", name + ".dlq")
				.containsEntry("x-max-length", 1000L)
				.containsEntry("x-max-length-bytes", 5000L)
				.containsEntry("x-overflow", "reject-publish")
				.containsEntry("x-dead-letter-strategy", "at-least-once");
			assertThat(queue(name + ".dlq").isDurable()).isTrue();
		}
	}

	@Test
	void aServiceDeclaresTheExchangesAndOnlyTheQueuesItConsumesWithTheirDeadLetterQueuesAndBindings() {
		TopologyProperties ingestor = new TopologyProperties(List.of(Queues.INGESTOR_DATA));
		List<String> names = MessagingConfiguration.topology(7, 1000, 5000L, ingestor::declares)
			.getDeclarables()
			.stream()
			.map((declarable) -> (declarable instanceof Queue queue) ? "queue " + queue.getName()
					: (declarable instanceof Binding binding) ? "binding " + binding.getDestination()
							: "exchange " + ((org.springframework.amqp.core.Exchange) declarable).getName())
			.toList();
		assertThat(names).containsExactlyInAnyOrder("exchange " + Queues.EXCHANGE,
				"exchange " + Queues.DEAD_LETTER_EXCHANGE, "queue " + Queues.INGESTOR_DATA,
				"queue " + Queues.INGESTOR_DATA + ".dlq", "binding " + Queues.INGESTOR_DATA + ".dlq",
				"binding " + Queues.INGESTOR_DATA);
		TopologyProperties publisherOnly = new TopologyProperties(List.of());
		assertThat(MessagingConfiguration.topology(7, 1000, 5000L, publisherOnly::declares).getDeclarables())
			.hasSize(2);
	}

	@Test
	void aDataRequestReachesTheIngestorAndTheRegistryLogQueue() {
		assertThat(reached(Queues.EXCHANGE, "data.requested")).containsExactlyInAnyOrder(Queues.INGESTOR_DATA,
				Queues.REGISTRY_APPLOG);
	}

	@Test
	void aDeadLetteredDataRequestReachesItsDlqAndTheRegistrysCopyQueue() {
		assertThat(reached(Queues.DEAD_LETTER_EXCHANGE, "elves.ingestor.data.in.dlq"))
			.containsExactlyInAnyOrder("elves.ingestor.data.in.dlq", Queues.REGISTRY_DEAD_REQUESTS);
		// The copy queue dead-letters nowhere: its original is already in the DLQ.
		assertThat(queue(Queues.REGISTRY_DEAD_REQUESTS).getArguments()).containsEntry("x-queue-type", "quorum")
			.doesNotContainKey("x-dead-letter-exchange");
	}

	/** The queues a message published to {@code exchange} with {@code routingKey} lands in. */
	private List<String> reached(String exchange, String routingKey) {
		return this.topology.getDeclarablesByType(Binding.class)
			.stream()
			.filter((binding) -> binding.getExchange().equals(exchange) && binding.getRoutingKey().equals(routingKey))
			.map(Binding::getDestination)
			.toList();
	}

	private Queue queue(String name) {
		return this.topology.getDeclarablesByType(Queue.class)
			.stream()
			.filter((queue) -> queue.getName().equals(name))
			.findFirst()
			.orElseThrow(() -> new AssertionError("no queue " + name));
	}

}
