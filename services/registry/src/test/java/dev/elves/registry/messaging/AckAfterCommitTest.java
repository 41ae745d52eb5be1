package dev.elves.registry.messaging;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import com.rabbitmq.client.Channel;
import dev.elves.contracts.messaging.Deliveries;
import dev.elves.registry.RegistryProperties;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.transaction.TransactionSystemException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.never;
import static org.mockito.Mockito.verify;

/** Every way the work can end settles the delivery; waiting for the database costs no attempt. */
class AckAfterCommitTest {

	private static final long TAG = 11;

	private final Channel channel = mock(Channel.class);

	private final Deliveries deliveries = new Deliveries("q", new SimpleMeterRegistry());

	private AckAfterCommit settle(Duration retryTimeout) {
		return new AckAfterCommit(new TransientRetry(new RegistryProperties(1, 1, 1, Duration.ofMillis(1), 1, 1,
				retryTimeout, Duration.ofSeconds(1))));
	}

	private static Message message() {
		MessageProperties properties = new MessageProperties();
		properties.setDeliveryTag(TAG);
		return new Message(new byte[0], properties);
	}

	@Test
	void theDatabaseAwayIsWaitedForInPlaceAndTheMessageAckedOnceItIsBack() throws Exception {
		AtomicInteger calls = new AtomicInteger();
		var stored = settle(Duration.ofSeconds(30)).store(this.deliveries, this.channel, List.of(message()), () -> {
			if (calls.incrementAndGet() == 1) {
				throw new DataAccessResourceFailureException("connection refused");
			}
			if (calls.get() == 2) {
				throw new TransactionSystemException("could not commit: connection lost");
			}
			return "row";
		});
		assertThat(stored).contains("row");
		verify(this.channel).basicAck(TAG, false);
		verify(this.channel, never()).basicNack(TAG, false, true);
	}

	@Test
	void pastTheDeadlineTheMessageGoesBackToTheQueue() throws Exception {
		var stored = settle(Duration.ofMillis(100)).store(this.deliveries, this.channel, List.of(message()), () -> {
			throw new DataAccessResourceFailureException("connection refused");
		});
		assertThat(stored).isEmpty();
		verify(this.channel).basicNack(TAG, false, true);
	}

	@Test
	void anUnexpectedFailureNeverLeavesTheMessageUnacked() throws Exception {
		var stored = settle(Duration.ofSeconds(30)).store(this.deliveries, this.channel, List.of(message()), () -> {
			throw new IllegalStateException("a bug");
		});
		assertThat(stored).isEmpty();
		verify(this.channel).basicNack(TAG, false, true);
	}

}
