package dev.elves.registry.messaging;

import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;

import com.rabbitmq.client.Channel;
import dev.elves.contracts.messaging.Deliveries;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.amqp.core.Message;
import org.springframework.dao.DataIntegrityViolationException;
import org.springframework.stereotype.Component;

/**
 * How every registry consumer settles what it stores: the messages are acknowledged only after
 * the transaction that stored them committed; while the database is away the work is retried
 * ({@link TransientRetry}), and past the deadline the messages go back to the queue, as they do
 * after any unexpected failure: no path leaves a delivery unsettled.
 */
@Component
public class AckAfterCommit {

	private static final Logger log = LoggerFactory.getLogger(AckAfterCommit.class);

	private final TransientRetry retry;

	AckAfterCommit(TransientRetry retry) {
		this.retry = retry;
	}

	/**
	 * Runs {@code work} (one transaction) and acks {@code messages} after it; empty when the
	 * messages were returned to the queue instead. A {@link DataIntegrityViolationException}
	 * passes through unsettled: the caller knows which message the database refused.
	 */
	public <T> Optional<T> store(Deliveries deliveries, Channel channel, List<Message> messages, Supplier<T> work) {
		T stored;
		try {
			stored = this.retry.call(work);
		}
		catch (TransientRetry.GaveUpException ex) {
			messages.forEach((message) -> deliveries.retryLater(channel, message, ex.getMessage()));
			return Optional.empty();
		}
		catch (DataIntegrityViolationException ex) {
			throw ex;
		}
		catch (RuntimeException ex) {
			// A bug or a surprise: never leave the messages unacknowledged (with a bounded
			// prefetch, a few of those would stall the consumer for good). Another try costs a
			// delivery; one that keeps failing ends in the dead-letter queue.
			log.error("storing {} message(s) failed unexpectedly; returning them to the queue", messages.size(), ex);
			messages.forEach((message) -> deliveries.retryLater(channel, message, ex.toString()));
			return Optional.empty();
		}
		messages.forEach((message) -> deliveries.ack(channel, message));
		return Optional.of(stored);
	}

	/** Sends a message the database refused (a constraint) to the dead-letter queue: it never fits. */
	public static void deadLetterRefused(Deliveries deliveries, Channel channel, Message message,
			DataIntegrityViolationException ex) {
		deliveries.deadLetter(channel, message, "database refused it: " + ex.getMostSpecificCause().getMessage());
	}

}
