package dev.elves.gateway.activity;

import java.util.Map;
import java.util.UUID;
import java.util.stream.Collectors;

import dev.elves.contracts.Activity;
import dev.elves.contracts.DataRequest;
import dev.elves.contracts.Envelope;
import dev.elves.contracts.MessageTypes;
import dev.elves.contracts.MetricNames;
import dev.elves.contracts.Route;
import dev.elves.contracts.messaging.ConfirmedPublisher;
import dev.elves.contracts.messaging.EnvelopeMessageConverter;
import dev.elves.gateway.web.Call;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;

import org.springframework.stereotype.Component;

/**
 * Every 2xx answer of the gateway is preceded by exactly one confirmed message that the
 * registry stores as the activity log of that call: the data request itself for getData, an
 * {@code activity.logged} message for the reads. If the broker cannot confirm it, the caller
 * gets 503 instead of an answer, so k6's 2xx count always equals the registry's log count.
 */
@Component
public class ActivityLog {

	private final ConfirmedPublisher publisher;

	private final EnvelopeMessageConverter converter;

	private final Map<String, Counter> accepted;

	ActivityLog(ConfirmedPublisher publisher, EnvelopeMessageConverter converter, MeterRegistry meters) {
		this.publisher = publisher;
		this.converter = converter;
		this.accepted = Endpoints.ALL.stream()
			.collect(Collectors.toUnmodifiableMap((endpoint) -> endpoint,
					(endpoint) -> meters.counter(MetricNames.REQUESTS_ACCEPTED, "endpoint", endpoint)));
	}

	/** Queues a data request for the ingestor; the same publish is its getData activity log. */
	public UUID requestData(Call call, DataRequest request) {
		UUID requestId = UUID.randomUUID();
		this.publisher.publish(Route.DATA_REQUEST, Envelope.create(requestId, MessageTypes.DATA_REQUESTED,
				call.userId(), call.testId(), this.converter.tree(request)));
		this.accepted.get(Endpoints.GET_DATA).increment();
		return requestId;
	}

	/** Logs a successful read; call it last, just before answering. */
	public void record(Call call, String endpoint, UUID requestId) {
		this.publisher.publish(Route.ACTIVITY_LOG, Envelope.create(UUID.randomUUID(), MessageTypes.ACTIVITY_LOGGED,
				call.userId(), call.testId(), this.converter.tree(new Activity(endpoint, requestId))));
		this.accepted.get(endpoint).increment();
	}

}
