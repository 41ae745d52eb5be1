package dev.elves.ingestor.jobs;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDate;
import java.time.LocalTime;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

import com.rabbitmq.client.Channel;
import dev.elves.contracts.DataRequest;
import dev.elves.contracts.Envelope;
import dev.elves.contracts.MessageTypes;
import dev.elves.contracts.PlotOutcome;
import dev.elves.contracts.ResultIds;
import dev.elves.contracts.Route;
import dev.elves.contracts.messaging.ConfirmedPublisher;
import dev.elves.contracts.messaging.EnvelopeMessageConverter;
import dev.elves.contracts.messaging.MessagingProperties;
import dev.elves.contracts.messaging.PublishFailedException;
import dev.elves.ingestor.IngestorProperties;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageProperties;

import tools.jackson.databind.json.JsonMapper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.mockito.ArgumentMatchers.any;
import static org.mockito.Mockito.doAnswer;
import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.never;
import static org.mockito.Mockito.verify;

/** The listener's decisions: what it publishes and how it settles each delivery. */
class JobListenerTest {

	private static final long TAG = 7;

	@TempDir
	Path scratch;

	private final EnvelopeMessageConverter converter = new EnvelopeMessageConverter(JsonMapper.builder().build());

	private final Channel channel = mock(Channel.class);

	private final ConfirmedPublisher publisher = mock(ConfirmedPublisher.class);

	private final List<Envelope> published = new ArrayList<>();

	private final SimpleMeterRegistry meters = new SimpleMeterRegistry();

	private JobListener listener;

	@BeforeEach
	void setUp() throws Exception {
		IngestorProperties properties = new IngestorProperties(100, 1, 96, 1, 1, this.scratch, java.time.Duration.ZERO);
		this.listener = new JobListener(new PlotJob(new ScratchSpace(properties), properties), this.publisher,
				this.converter, MessagingProperties.of(3, Duration.ofSeconds(1)), this.meters);
		doAnswer((call) -> this.published.add(call.getArgument(1))).when(this.publisher).publishPatiently(any(), any());
	}

	private Message request(DataRequest data, long previousDeliveries) {
		Envelope envelope = Envelope.create(UUID.randomUUID(), MessageTypes.DATA_REQUESTED, "alice", "t",
				this.converter.tree(data));
		MessageProperties properties = new MessageProperties();
		properties.setDeliveryTag(TAG);
		if (previousDeliveries > 0) {
			properties.setHeader("x-delivery-count", previousDeliveries);
		}
		return this.converter.toMessage(envelope, properties);
	}

	private static DataRequest valid() {
		return new DataRequest("KTLX", LocalDate.of(2024, 5, 20), LocalTime.of(10, 0), LocalTime.of(11, 0));
	}

	@Test
	void aGoodRequestPublishesStartedThenCompletedWithDerivedIdsAndIsAckedAfterwards() throws Exception {
		Message message = request(valid(), 0);
		UUID requestId = this.converter.fromMessage(message).id();

		this.listener.onRequest(message, this.channel);

		assertThat(this.published).extracting(Envelope::type)
			.containsExactly(MessageTypes.PLOT_STARTED, MessageTypes.PLOT_COMPLETED);
		assertThat(this.published.get(1).id()).isEqualTo(ResultIds.derive(requestId, MessageTypes.PLOT_COMPLETED));
		assertThat(this.published.get(1).testId()).isEqualTo("t");
		verify(this.channel).basicAck(TAG, false);
		assertThat(this.scratch).isEmptyDirectory();
	}

	@Test
	void garbageGoesToTheDeadLetterQueueWithoutAnyResult() throws Exception {
		MessageProperties properties = new MessageProperties();
		properties.setDeliveryTag(TAG);

		this.listener.onRequest(new Message("garbage".getBytes(StandardCharsets.UTF_8), properties), this.channel);

		verify(this.channel).basicReject(TAG, false);
		assertThat(this.published).isEmpty();
		assertThat(this.meters.counter("elves.messages.dead.lettered", "queue", "elves.ingestor.data.in").count())
			.isEqualTo(1);
	}

	@Test
	void aRequestThatCanNeverWorkIsReportedFailedAndDeadLettered() throws Exception {
		this.listener.onRequest(request(new DataRequest("KTLX", LocalDate.of(2024, 5, 20), LocalTime.of(11, 0),
				LocalTime.of(10, 0)), 0), this.channel);

		assertThat(this.published).extracting(Envelope::type).containsExactly(MessageTypes.PLOT_FAILED);
		verify(this.channel).basicReject(TAG, false);
	}

	@Test
	void whenTheBrokerCannotConfirmTheRequestGoesBackToTheQueueUnacked() throws Exception {
		doAnswer((call) -> {
			throw new PublishFailedException("broker unreachable", null);
		}).when(this.publisher).publishPatiently(any(), any());

		this.listener.onRequest(request(valid(), 0), this.channel);

		verify(this.channel).basicNack(TAG, false, true);
		verify(this.channel, never()).basicAck(TAG, false);
	}

	@Test
	void anUnexpectedFailureIsRetriedAndOnTheLastAllowedDeliveryReportedFailed() throws Exception {
		doAnswer((call) -> {
			Envelope envelope = call.getArgument(1);
			if (envelope.type().equals(MessageTypes.PLOT_COMPLETED)) {
				throw new IllegalStateException("renderer broke");
			}
			return this.published.add(envelope);
		}).when(this.publisher).publishPatiently(any(Route.class), any());

		this.listener.onRequest(request(valid(), 0), this.channel);
		verify(this.channel).basicNack(TAG, false, true);

		this.listener.onRequest(request(valid(), 2), this.channel);
		assertThat(this.published).extracting(Envelope::type).endsWith(MessageTypes.PLOT_FAILED);
		verify(this.channel).basicReject(TAG, false);
	}

	@Test
	void theBrokersLastDeliveryAfterAttemptsThatDiedIsReportedFailedWithoutAnotherAttempt() throws Exception {
		// Limit 3: three attempts (x-delivery-count 0, 1, 2) ended with the process dying, and the
		// quorum queue delivers once more before it dead-letters the message.
		this.listener.onRequest(request(valid(), 3), this.channel);

		assertThat(this.published).extracting(Envelope::type).containsExactly(MessageTypes.PLOT_FAILED);
		assertThat(this.converter.data(this.published.get(0), PlotOutcome.class).error())
			.contains("gave up after 3 attempts", "out of memory");
		verify(this.channel).basicReject(TAG, false);
		verify(this.channel, never()).basicAck(TAG, false);
		assertThat(this.meters.timer("elves.ingestor.job", "outcome", "failed").count()).isEqualTo(1);
	}

}
