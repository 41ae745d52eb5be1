package dev.elves.contracts.messaging;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Optional;
import java.util.function.Function;

import com.rabbitmq.client.Channel;
import dev.elves.contracts.MetricNames;
import io.micrometer.core.instrument.MeterRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.amqp.core.Message;

/**
 * Settles deliveries of a manual-ack consumer: ack after the work is durable, reject a poison
 * message to its dead-letter queue (counted), or return it for another try, which counts
 * against the queue's delivery limit.
 */
public final class Deliveries {

	private static final Logger log = LoggerFactory.getLogger(Deliveries.class);

	private final String queue;

	private final MeterRegistry meters;

	public Deliveries(String queue, MeterRegistry meters) {
		this.queue = queue;
		this.meters = meters;
		meters.counter(MetricNames.DEAD_LETTERED, "queue", queue);
		meters.counter(MetricNames.RETURNED, "queue", queue);
	}

	/**
	 * Reads a delivery with {@code reader} (say, the envelope and its payload). A message the
	 * reader finds poison is dead-lettered here and the answer is empty: the caller is done with it.
	 */
	public <T> Optional<T> read(Channel channel, Message message, Function<Message, T> reader) {
		try {
			return Optional.of(reader.apply(message));
		}
		catch (PoisonMessageException ex) {
			deadLetter(channel, message, ex.getMessage());
			return Optional.empty();
		}
		catch (RuntimeException ex) {
			// Reading is deterministic: what fails once fails every time. Never leave it unsettled.
			log.error("could not read message {} from {}", message.getMessageProperties().getMessageId(), this.queue, ex);
			deadLetter(channel, message, "unreadable: " + ex);
			return Optional.empty();
		}
	}

	public void ack(Channel channel, Message message) {
		settle(() -> channel.basicAck(tag(message), false));
	}

	/** Sends the message to {@code <queue>.dlq}: it can never succeed, and must not block others. */
	public void deadLetter(Channel channel, Message message, String reason) {
		log.warn("dead-lettering message {} from {}: {}", message.getMessageProperties().getMessageId(), this.queue,
				reason);
		settle(() -> channel.basicReject(tag(message), false));
		this.meters.counter(MetricNames.DEAD_LETTERED, "queue", this.queue).increment();
	}

	/** Returns the message to the queue for a later try (the broker counts the delivery). */
	public void retryLater(Channel channel, Message message, String reason) {
		log.warn("returning message {} to {} for another try: {}", message.getMessageProperties().getMessageId(),
				this.queue, reason);
		settle(() -> channel.basicNack(tag(message), false, true));
		this.meters.counter(MetricNames.RETURNED, "queue", this.queue).increment();
	}

	/** How often the broker has delivered this message before (quorum queues count it). */
	public static long previousDeliveries(Message message) {
		Object count = message.getMessageProperties().getHeaders().get("x-delivery-count");
		return (count instanceof Number number) ? number.longValue() : 0;
	}

	private static long tag(Message message) {
		return message.getMessageProperties().getDeliveryTag();
	}

	private static void settle(ChannelAction action) {
		try {
			action.run();
		}
		catch (IOException ex) {
			// The channel is gone: the broker returns the unsettled message by itself.
			throw new UncheckedIOException("could not settle a delivery; the broker will redeliver it", ex);
		}
	}

	@FunctionalInterface
	private interface ChannelAction {

		void run() throws IOException;

	}

}
