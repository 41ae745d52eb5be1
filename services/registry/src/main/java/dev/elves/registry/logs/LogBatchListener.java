package dev.elves.registry.logs;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

import com.rabbitmq.client.Channel;
import dev.elves.contracts.Activity;
import dev.elves.contracts.DataRequest;
import dev.elves.contracts.Envelope;
import dev.elves.contracts.MessageTypes;
import dev.elves.contracts.MetricNames;
import dev.elves.contracts.Queues;
import dev.elves.contracts.messaging.Deliveries;
import dev.elves.contracts.messaging.EnvelopeMessageConverter;
import dev.elves.contracts.messaging.PoisonMessageException;
import dev.elves.registry.duplicates.DuplicateCounter;
import dev.elves.registry.messaging.AckAfterCommit;
import dev.elves.registry.web.StoredText;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;

import org.springframework.amqp.core.Message;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.dao.DataIntegrityViolationException;
import org.springframework.stereotype.Component;

/**
 * Consumes {@code elves.registry.applog.in} in batches: poison messages go to the dead-letter
 * queue at once, the rest are written in one transaction and acknowledged after the commit.
 */
@Component
class LogBatchListener {

	static final String ENDPOINT_GET_DATA = "getData";

	static final int MAX_TEXT = 200;

	private final LogStore store;

	private final EnvelopeMessageConverter converter;

	private final AckAfterCommit settle;

	private final DuplicateCounter duplicates;

	private final Deliveries deliveries;

	private final Counter persisted;

	LogBatchListener(LogStore store, EnvelopeMessageConverter converter, AckAfterCommit settle,
			DuplicateCounter duplicates, MeterRegistry meters) {
		this.store = store;
		this.converter = converter;
		this.settle = settle;
		this.duplicates = duplicates;
		this.deliveries = new Deliveries(Queues.REGISTRY_APPLOG, meters);
		this.persisted = meters.counter(MetricNames.LOGS_PERSISTED);
	}

	private record Incoming(Message message, NewLog log) {
	}

	@RabbitListener(id = "activity-logs", queues = Queues.REGISTRY_APPLOG, containerFactory = "logBatchContainerFactory")
	void onBatch(List<Message> messages, Channel channel) {
		List<Incoming> good = new ArrayList<>(messages.size());
		for (Message message : messages) {
			this.deliveries.read(channel, message, (m) -> new Incoming(m, toLog(this.converter.fromMessage(m))))
				.ifPresent(good::add);
		}
		if (good.isEmpty()) {
			return;
		}
		try {
			store(good, channel);
		}
		catch (DataIntegrityViolationException ex) {
			// One message the database refuses spoils the batch: find it by writing them one by one.
			for (Incoming incoming : good) {
				try {
					store(List.of(incoming), channel);
				}
				catch (DataIntegrityViolationException refused) {
					AckAfterCommit.deadLetterRefused(this.deliveries, channel, incoming.message(), refused);
				}
			}
		}
	}

	private void store(List<Incoming> batch, Channel channel) {
		List<NewLog> logs = batch.stream().map(Incoming::log).toList();
		List<Message> messages = batch.stream().map(Incoming::message).toList();
		this.settle.store(this.deliveries, channel, messages, () -> this.store.save(logs, Queues.REGISTRY_APPLOG))
			.ifPresent((saved) -> {
				this.persisted.increment(saved.inserted());
				this.duplicates.count(Queues.REGISTRY_APPLOG, saved.duplicates());
			});
	}

	/** Both a data request (the getData log) and an activity log become a log row. */
	NewLog toLog(Envelope envelope) {
		String userId = requireText(envelope, "userId", envelope.userId());
		String testId = optionalText(envelope, "testId", envelope.testId());
		Instant time = (envelope.time() != null) ? envelope.time() : Instant.now();
		return switch (envelope.type()) {
			case MessageTypes.DATA_REQUESTED -> {
				DataRequest request = this.converter.data(envelope, DataRequest.class);
				if (request.radar() == null || request.date() == null || request.start() == null
						|| request.end() == null) {
					throw new PoisonMessageException("data request " + envelope.id() + " lacks radar, date, start or end");
				}
				yield new NewLog(envelope.id(), userId, ENDPOINT_GET_DATA, envelope.id(), testId, time, request);
			}
			case MessageTypes.ACTIVITY_LOGGED -> {
				Activity activity = this.converter.data(envelope, Activity.class);
				String endpoint = requireText(envelope, "data.endpoint", activity.endpoint());
				yield new NewLog(envelope.id(), userId, endpoint, activity.requestId(), testId, time, null);
			}
			default -> throw new PoisonMessageException(
					"message " + envelope.id() + " has type " + envelope.type() + ", not an activity log");
		};
	}

	private static String requireText(Envelope envelope, String field, String value) {
		if (value == null || value.isBlank()) {
			throw new PoisonMessageException("message " + envelope.id() + " has no " + field);
		}
		return optionalText(envelope, field, value);
	}

	private static String optionalText(Envelope envelope, String field, String value) {
		if (value != null && value.length() > MAX_TEXT) {
			throw new PoisonMessageException("message " + envelope.id() + " has a " + field + " of " + value.length()
					+ " characters (at most " + MAX_TEXT + ")");
		}
		if (!StoredText.storable(value)) {
			// Stored, it would fail its whole batch, again at every delivery.
			throw new PoisonMessageException("message " + envelope.id() + " has a NUL character in " + field);
		}
		return value;
	}

}
