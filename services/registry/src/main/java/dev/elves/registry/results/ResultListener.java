package dev.elves.registry.results;

import java.util.List;
import java.util.Optional;

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
import dev.elves.registry.messaging.AckAfterCommit;
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

	private final AckAfterCommit settle;

	private final DuplicateCounter duplicates;

	private final Deliveries deliveries;

	private final MeterRegistry meters;

	ResultListener(ResultStore store, EnvelopeMessageConverter converter, AckAfterCommit settle,
			DuplicateCounter duplicates, MeterRegistry meters) {
		this.store = store;
		this.converter = converter;
		this.settle = settle;
		this.duplicates = duplicates;
		this.deliveries = new Deliveries(Queues.REGISTRY_INGESTOR, meters);
		this.meters = meters;
		meters.counter(MetricNames.RESULTS_PERSISTED, "status", "DONE");
		meters.counter(MetricNames.RESULTS_PERSISTED, "status", "FAILED");
	}

	private record Result(Envelope envelope, PlotOutcome outcome) {
	}

	@RabbitListener(id = "plot-results", queues = Queues.REGISTRY_INGESTOR, containerFactory = "resultContainerFactory")
	void onResult(Message message, Channel channel) {
		Optional<Result> result = this.deliveries.read(channel, message, (m) -> {
			Envelope envelope = this.converter.fromMessage(m);
			return new Result(envelope, read(envelope));
		});
		if (result.isEmpty()) {
			return;
		}
		Envelope envelope = result.get().envelope();
		Optional<ResultStore.Applied> applied;
		try {
			applied = this.settle.store(this.deliveries, channel, List.of(message),
					() -> this.store.apply(envelope, result.get().outcome()));
		}
		catch (DataIntegrityViolationException ex) {
			AckAfterCommit.deadLetterRefused(this.deliveries, channel, message, ex);
			return;
		}
		applied.ifPresent((what) -> count(what, envelope));
	}

	private void count(ResultStore.Applied applied, Envelope envelope) {
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
