package dev.elves.contracts.messaging;

import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import dev.elves.contracts.Envelope;
import dev.elves.contracts.MetricNames;
import dev.elves.contracts.Queues;
import dev.elves.contracts.Route;
import io.micrometer.core.instrument.MeterRegistry;

import org.springframework.amqp.AmqpException;
import org.springframework.amqp.core.ReturnedMessage;
import org.springframework.amqp.rabbit.connection.CorrelationData;
import org.springframework.amqp.rabbit.core.RabbitTemplate;

/**
 * Publishes an envelope and returns only once the broker has confirmed it (written to every
 * queue its route reaches), or throws {@link PublishFailedException} within the confirm timeout.
 * Callers can therefore tell a user "accepted" and mean it.
 */
public class ConfirmedPublisher {

	private static final long FIRST_PAUSE_MILLIS = 100;

	private static final long LONGEST_PAUSE_MILLIS = 5_000;

	private final RabbitTemplate template;

	private final Duration confirmTimeout;

	private final Duration patience;

	private final MeterRegistry meters;

	public ConfirmedPublisher(RabbitTemplate template, MessagingProperties properties, MeterRegistry meters) {
		this.template = template;
		this.confirmTimeout = properties.confirmTimeout();
		this.patience = properties.publishPatience();
		this.meters = meters;
	}

	/**
	 * Like {@link #publish}, but a refused publish (a full queue) is tried again, with back-off,
	 * for up to {@code ELVES_PUBLISH_PATIENCE}: a consumer waiting here for its result queue to
	 * make room holds its delivery instead of spending the delivery limit on immediate retries.
	 * Any other failure, or the patience used up, is thrown as by {@link #publish}.
	 */
	public void publishPatiently(Route route, Envelope envelope) throws InterruptedException {
		long deadline = System.nanoTime() + this.patience.toNanos();
		long pauseMillis = FIRST_PAUSE_MILLIS;
		while (true) {
			try {
				publish(route, envelope);
				return;
			}
			catch (PublishRejectedException ex) {
				if (System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(pauseMillis) > deadline) {
					throw ex;
				}
				Thread.sleep(pauseMillis);
				pauseMillis = Math.min(pauseMillis * 2, LONGEST_PAUSE_MILLIS);
			}
		}
	}

	public void publish(Route route, Envelope envelope) {
		CorrelationData correlation = new CorrelationData(envelope.id().toString());
		try {
			this.template.convertAndSend(Queues.EXCHANGE, route.routingKey(), envelope, correlation);
		}
		catch (AmqpException ex) {
			throw new PublishFailedException("broker unreachable: " + rootMessage(ex), ex);
		}
		count(MetricNames.MESSAGES_PUBLISHED, route);
		CorrelationData.Confirm confirm = awaitConfirm(correlation, envelope);
		if (!confirm.ack()) {
			throw new PublishRejectedException("broker refused message " + envelope.id() + " (a queue of "
					+ route.routingKey() + " is full?): " + confirm.reason());
		}
		ReturnedMessage returned = correlation.getReturned();
		if (returned != null) {
			throw new PublishFailedException("no queue bound for routing key " + route.routingKey() + ": "
					+ returned.getReplyText(), null);
		}
		count(MetricNames.MESSAGES_CONFIRMED, route);
	}

	private CorrelationData.Confirm awaitConfirm(CorrelationData correlation, Envelope envelope) {
		try {
			return correlation.getFuture().get(this.confirmTimeout.toMillis(), TimeUnit.MILLISECONDS);
		}
		catch (TimeoutException ex) {
			throw new PublishFailedException(
					"broker did not confirm message " + envelope.id() + " within " + this.confirmTimeout, ex);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new PublishFailedException("interrupted while waiting for the broker's confirm", ex);
		}
		catch (ExecutionException ex) {
			throw new PublishFailedException("confirm failed: " + rootMessage(ex), ex);
		}
	}

	private void count(String name, Route route) {
		for (String queue : route.queues()) {
			this.meters.counter(name, "queue", queue).increment();
		}
	}

	private static String rootMessage(Throwable ex) {
		Throwable root = ex;
		while (root.getCause() != null && root.getCause() != root) {
			root = root.getCause();
		}
		return (root.getMessage() != null) ? root.getMessage() : root.getClass().getSimpleName();
	}

}
