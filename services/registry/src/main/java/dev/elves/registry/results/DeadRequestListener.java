package dev.elves.registry.results;

import java.util.List;

import com.rabbitmq.client.Channel;
import dev.elves.contracts.Envelope;
import dev.elves.contracts.MessageTypes;
import dev.elves.contracts.MetricNames;
import dev.elves.contracts.Queues;
import dev.elves.contracts.messaging.Deliveries;
import dev.elves.contracts.messaging.EnvelopeMessageConverter;
import dev.elves.contracts.messaging.PoisonMessageException;
import dev.elves.registry.messaging.AckAfterCommit;
import io.micrometer.core.instrument.MeterRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.amqp.core.Message;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.dao.DataIntegrityViolationException;
import org.springframework.stereotype.Component;

/**
 * Consumes {@code elves.registry.deadrequests.in}, the broker's copy of every data request it
 * dead-lettered from the ingestor's queue, and records the request FAILED unless it has ended
 * already. This is what makes a request that killed the ingestor on every attempt (out of
 * memory) end FAILED, whatever the broker's delivery count did: the ingestor cannot report it,
 * and a quorum queue may dead-letter it without showing the ingestor a last delivery.
 */
@Component
class DeadRequestListener {

	private static final Logger log = LoggerFactory.getLogger(DeadRequestListener.class);

	/** The ingestor rejects only after its plot.failed is confirmed: such a copy adds nothing. */
	static final String REJECTED = "rejected";

	private final ResultStore store;

	private final EnvelopeMessageConverter converter;

	private final AckAfterCommit settle;

	private final Deliveries deliveries;

	private final MeterRegistry meters;

	DeadRequestListener(ResultStore store, EnvelopeMessageConverter converter, AckAfterCommit settle,
			MeterRegistry meters) {
		this.store = store;
		this.converter = converter;
		this.settle = settle;
		this.deliveries = new Deliveries(Queues.REGISTRY_DEAD_REQUESTS, meters);
		this.meters = meters;
	}

	@RabbitListener(id = "dead-requests", queues = Queues.REGISTRY_DEAD_REQUESTS,
			containerFactory = "resultContainerFactory")
	void onDeadRequest(Message message, Channel channel) {
		String reason = String.valueOf(message.getMessageProperties().getHeaders().get("x-first-death-reason"));
		Envelope envelope;
		try {
			envelope = this.converter.fromMessage(message);
		}
		catch (PoisonMessageException ex) {
			// Not a request at all; its original waits in the DLQ.
			log.info("ignoring a dead letter that is not an envelope ({}): {}", reason, ex.getMessage());
			this.deliveries.ack(channel, message);
			return;
		}
		if (REJECTED.equals(reason) || !MessageTypes.DATA_REQUESTED.equals(envelope.type())) {
			this.deliveries.ack(channel, message);
			return;
		}
		String error = "the broker dead-lettered it (" + reason + "): the ingestor stopped during its attempts"
				+ " (out of memory, or killed)";
		try {
			boolean failedNow = this.settle
				.store(this.deliveries, channel, List.of(message), () -> this.store.failDeadLettered(envelope, error))
				.orElse(false);
			if (failedNow) {
				this.meters.counter(MetricNames.RESULTS_PERSISTED, "status", "FAILED").increment();
			}
		}
		catch (DataIntegrityViolationException ex) {
			AckAfterCommit.deadLetterRefused(this.deliveries, channel, message, ex);
		}
	}

}
