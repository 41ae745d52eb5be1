package dev.elves.registry.results;

import com.rabbitmq.client.Channel;
import dev.elves.contracts.Envelope;
import dev.elves.contracts.MessageTypes;
import dev.elves.contracts.MetricNames;
import dev.elves.contracts.PlotOutcome;
import dev.elves.contracts.Queues;
import dev.elves.contracts.messaging.Deliveries;
import dev.elves.contracts.messaging.EnvelopeMessageConverter;
import dev.elves.contracts.messaging.PoisonMessageException;
import dev.elves.registry.duplicates.DuplicateCounter;
import dev.elves.registry.messaging.TransientRetry;
import io.micrometer.core.instrument.MeterRegistry;

import org.springframework.amqp.core.Message;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.dao.DataIntegrityViolationException;
import org.springframework.stereotype.Component;

/** Consumes {@code elves.registry.ingestor.in}: plot.started, plot.completed, plot.failed. */
@Component
class ResultListener {

	private final ResultStore store;

	private final EnvelopeMessageConverter converter;

	private final TransientRetry retry;

	private final DuplicateCounter duplicates;

	private final Deliveries deliveries;

	private final MeterRegistry meters;

	ResultListener(ResultStore store, EnvelopeMessageConverter converter, TransientRetry retry,
			DuplicateCounter duplicates, MeterRegistry meters) {
		this.store = store;
		this.converter = converter;
		this.retry = retry;
		this.duplicates = duplicates;
		this.deliveries = new Deliveries(Queues.REGISTRY_INGESTOR, meters);
		this.meters = meters;
		meters.counter(MetricNames.RESULTS_PERSISTED, "status", "DONE");
		meters.counter(MetricNames.RESULTS_PERSISTED, "status", "FAILED");
	}

	@RabbitListener(id = "plot-results", queues = Queues.REGISTRY_INGESTOR, containerFactory = "resultContainerFactory")
	void onResult(Message message, Channel channel) {
		Envelope envelope;
		PlotOutcome outcome;
		try {
			envelope = this.converter.fromMessage(message);
			outcome = read(envelope);
		}
		catch (PoisonMessageException ex) {
			this.deliveries.deadLetter(channel, message, ex.getMessage());
			return;
		}
		ResultStore.Applied applied;
		try {
			applied = this.retry.call(() -> this.store.apply(envelope, outcome));
		}
		catch (TransientRetry.GaveUpException ex) {
			this.deliveries.retryLater(channel, message, ex.getMessage());
			return;
		}
		catch (DataIntegrityViolationException ex) {
			this.deliveries.deadLetter(channel, message, "database refused it: " + ex.getMostSpecificCause().getMessage());
			return;
		}
		this.deliveries.ack(channel, message);
		if (applied == ResultStore.Applied.DUPLICATE) {
			this.duplicates.count(Queues.REGISTRY_INGESTOR, 1);
		}
		else if (applied == ResultStore.Applied.TERMINAL) {
			this.meters.counter(MetricNames.RESULTS_PERSISTED, "status", ResultStore.statusOf(envelope.type()))
				.increment();
		}
	}

	private PlotOutcome read(Envelope envelope) {
		if (!MessageTypes.PLOT_RESULTS.contains(envelope.type())) {
			throw new PoisonMessageException("message " + envelope.id() + " has type " + envelope.type()
					+ ", not a plot result");
		}
		PlotOutcome outcome = this.converter.data(envelope, PlotOutcome.class);
		if (outcome.requestId() == null) {
			throw new PoisonMessageException("result " + envelope.id() + " names no requestId");
		}
		if (MessageTypes.PLOT_COMPLETED.equals(envelope.type()) && (outcome.png() == null || outcome.png().length == 0)) {
			throw new PoisonMessageException("completed result " + envelope.id() + " carries no png");
		}
		return outcome;
	}

}
