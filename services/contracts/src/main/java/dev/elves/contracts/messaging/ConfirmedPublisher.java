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

	private final RabbitTemplate template;

	private final Duration confirmTimeout;

	private final MeterRegistry meters;

	public ConfirmedPublisher(RabbitTemplate template, MessagingProperties properties, MeterRegistry meters) {
		this.template = template;
		this.confirmTimeout = properties.confirmTimeout();
		this.meters = meters;
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
			throw new PublishFailedException("broker refused message " + envelope.id() + ": " + confirm.reason(), null);
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
