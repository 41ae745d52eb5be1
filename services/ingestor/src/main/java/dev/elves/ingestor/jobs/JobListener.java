package dev.elves.ingestor.jobs;

import java.util.UUID;

import com.rabbitmq.client.Channel;
import dev.elves.contracts.DataRequest;
import dev.elves.contracts.Envelope;
import dev.elves.contracts.MessageTypes;
import dev.elves.contracts.MetricNames;
import dev.elves.contracts.PlotOutcome;
import dev.elves.contracts.Queues;
import dev.elves.contracts.ResultIds;
import dev.elves.contracts.Route;
import dev.elves.contracts.messaging.ConfirmedPublisher;
import dev.elves.contracts.messaging.Deliveries;
import dev.elves.contracts.messaging.EnvelopeMessageConverter;
import dev.elves.contracts.messaging.MessagingProperties;
import dev.elves.contracts.messaging.PoisonMessageException;
import dev.elves.contracts.messaging.PublishFailedException;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.amqp.core.Message;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.stereotype.Component;

/**
 * Consumes {@code elves.ingestor.data.in}. A request is acknowledged only after its result is
 * confirmed by the broker, so a crash at any point means redelivery, and the result ids
 * (derived from the request id) let the registry discard the second copy.
 *
 * <p>
 * A job that throws is retried, and after its last attempt ({@code ELVES_DELIVERY_LIMIT})
 * reported as plot.failed. A delivery whose {@code x-delivery-count} has reached the limit only
 * comes after attempts that all killed the ingestor (out of memory): it is not attempted again
 * but reported as plot.failed. The broker may dead-letter such a message without that delivery
 * (RabbitMQ 3.10 counts a dying connection with several consumers twice), so the registry also
 * records FAILED from its copy of every dead letter.
 */
@Component
class JobListener {

	private static final Logger log = LoggerFactory.getLogger(JobListener.class);

	private final PlotJob job;

	private final ConfirmedPublisher publisher;

	private final EnvelopeMessageConverter converter;

	private final Deliveries deliveries;

	private final MeterRegistry meters;

	private final int deliveryLimit;

	JobListener(PlotJob job, ConfirmedPublisher publisher, EnvelopeMessageConverter converter,
			MessagingProperties messaging, MeterRegistry meters) {
		this.job = job;
		this.publisher = publisher;
		this.converter = converter;
		this.deliveries = new Deliveries(Queues.INGESTOR_DATA, meters);
		this.meters = meters;
		this.deliveryLimit = messaging.deliveryLimit();
	}

	@RabbitListener(id = "data-requests", queues = Queues.INGESTOR_DATA, containerFactory = "jobContainerFactory")
	void onRequest(Message message, Channel channel) {
		this.deliveries.read(channel, message, this.converter::fromMessage).ifPresent((envelope) -> {
			Timer.Sample sample = Timer.start(this.meters);
			String outcome = handle(envelope, message, channel);
			sample.stop(this.meters.timer(MetricNames.INGESTOR_JOB, "outcome", outcome));
		});
	}

	private String handle(Envelope envelope, Message message, Channel channel) {
		try {
			DataRequest request = read(envelope);
			if (Deliveries.previousDeliveries(message) >= this.deliveryLimit) {
				return failForGood(envelope, message, channel, "gave up after " + this.deliveryLimit
						+ " attempts: the ingestor stopped during the last one (out of memory, or killed)");
			}
			publish(envelope, MessageTypes.PLOT_STARTED, PlotOutcome.started(envelope.id()));
			byte[] png = this.job.run(envelope.id(), request);
			publish(envelope, MessageTypes.PLOT_COMPLETED, PlotOutcome.completed(envelope.id(), png));
			this.deliveries.ack(channel, message);
			return "completed";
		}
		catch (PoisonMessageException ex) {
			return failForGood(envelope, message, channel, ex.getMessage());
		}
		catch (PublishFailedException ex) {
			// The broker is in trouble; the request waits in the queue for a better moment.
			this.deliveries.retryLater(channel, message, ex.getMessage());
			return "retried";
		}
		catch (InterruptedException ex) {
			// Shutting down mid-job: another replica (or this one, restarted) does it again.
			Thread.currentThread().interrupt();
			this.deliveries.retryLater(channel, message, "interrupted by shutdown");
			return "retried";
		}
		catch (Exception | OutOfMemoryError ex) {
			// Unexpected (disk full, a bug, too little heap without ExitOnOutOfMemoryError): try
			// again, and after the last attempt, report the failure with its reason.
			String reason = ex.getClass().getSimpleName() + ": " + ex.getMessage();
			log.warn("job {} failed: {}", envelope.id(), reason);
			if (Deliveries.previousDeliveries(message) + 1 >= this.deliveryLimit) {
				return failForGood(envelope, message, channel, "gave up after " + this.deliveryLimit + " attempts: "
						+ reason);
			}
			this.deliveries.retryLater(channel, message, reason);
			return "retried";
		}
	}

	/** Tells the registry (status FAILED) and parks the request in the dead-letter queue. */
	private String failForGood(Envelope envelope, Message message, Channel channel, String reason) {
		try {
			publish(envelope, MessageTypes.PLOT_FAILED, PlotOutcome.failed(envelope.id(), reason));
		}
		catch (PublishFailedException ex) {
			this.deliveries.retryLater(channel, message, ex.getMessage());
			return "retried";
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			this.deliveries.retryLater(channel, message, "interrupted by shutdown");
			return "retried";
		}
		this.deliveries.deadLetter(channel, message, reason);
		return "failed";
	}

	private DataRequest read(Envelope envelope) {
		if (!MessageTypes.DATA_REQUESTED.equals(envelope.type())) {
			throw new PoisonMessageException("message " + envelope.id() + " has type " + envelope.type()
					+ ", not " + MessageTypes.DATA_REQUESTED);
		}
		DataRequest request = this.converter.data(envelope, DataRequest.class);
		if (request.radar() == null || request.radar().isBlank() || request.date() == null || request.start() == null
				|| request.end() == null) {
			throw new PoisonMessageException("request " + envelope.id() + " lacks radar, date, start or end");
		}
		if (!request.end().isAfter(request.start())) {
			throw new PoisonMessageException("request " + envelope.id() + " ends before it starts");
		}
		return request;
	}

	/** A full result queue is waited for here (see {@link ConfirmedPublisher#publishPatiently}). */
	private void publish(Envelope request, String type, PlotOutcome outcome) throws InterruptedException {
		UUID id = ResultIds.derive(request.id(), type);
		this.publisher.publishPatiently(Route.PLOT_RESULT,
				Envelope.create(id, type, request.userId(), request.testId(), this.converter.tree(outcome)));
	}

}
