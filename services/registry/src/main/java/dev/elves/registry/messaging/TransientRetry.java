package dev.elves.registry.messaging;

import java.time.Duration;
import java.util.function.Supplier;

import dev.elves.registry.RegistryProperties;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.dao.RecoverableDataAccessException;
import org.springframework.dao.TransientDataAccessException;
import org.springframework.stereotype.Component;
import org.springframework.transaction.CannotCreateTransactionException;
import org.springframework.transaction.TransactionSystemException;

/**
 * Retries database work while the database is away (restart, failover), with back-off, up to
 * a deadline ({@code ELVES_REGISTRY_RETRY_TIMEOUT}, 25 minutes by default: under RabbitMQ's
 * 30-minute consumer timeout). The consumer holds its deliveries meanwhile, so it takes no new
 * ones: waiting for the database costs no delivery attempt. Returning the messages to the
 * queue instead would spend their delivery limit in minutes and dead-letter good messages
 * during an outage.
 */
@Component
public class TransientRetry {

	private static final Logger log = LoggerFactory.getLogger(TransientRetry.class);

	private static final Duration FIRST_PAUSE = Duration.ofMillis(200);

	private static final Duration LONGEST_PAUSE = Duration.ofSeconds(5);

	private final Duration timeout;

	TransientRetry(RegistryProperties properties) {
		this.timeout = properties.retryTimeout();
	}

	public <T> T call(Supplier<T> work) {
		long deadline = System.nanoTime() + this.timeout.toNanos();
		Duration pause = FIRST_PAUSE;
		while (true) {
			try {
				return work.get();
			}
			catch (RuntimeException ex) {
				if (!isTransient(ex)) {
					throw ex;
				}
				if (System.nanoTime() + pause.toNanos() > deadline) {
					throw new GaveUpException("database still unavailable after " + this.timeout + ": "
							+ ex.getMessage(), ex);
				}
				log.warn("database unavailable ({}), retrying in {} ms", ex.getMessage(), pause.toMillis());
				sleep(pause, ex);
				pause = (pause.compareTo(LONGEST_PAUSE) < 0) ? pause.multipliedBy(2) : LONGEST_PAUSE;
			}
		}
	}

	static boolean isTransient(Throwable ex) {
		// A commit that failed with the connection is a TransactionSystemException: its outcome is
		// unknown, and writing again is safe because every store is idempotent.
		return ex instanceof TransientDataAccessException || ex instanceof RecoverableDataAccessException
				|| ex instanceof DataAccessResourceFailureException || ex instanceof CannotCreateTransactionException
				|| ex instanceof TransactionSystemException;
	}

	private static void sleep(Duration pause, RuntimeException cause) {
		try {
			Thread.sleep(pause.toMillis());
		}
		catch (InterruptedException interrupted) {
			// Shutting down: give the messages back rather than keep the container waiting.
			Thread.currentThread().interrupt();
			throw new GaveUpException("interrupted while waiting for the database", cause);
		}
	}

	/** The database stayed away past the deadline; the caller returns its messages to the queue. */
	public static class GaveUpException extends RuntimeException {

		GaveUpException(String message, Throwable cause) {
			super(message, cause);
		}

	}

}
