package dev.elves.registry.logs;

import java.time.LocalDate;
import java.time.LocalTime;
import java.util.UUID;

import dev.elves.contracts.Activity;
import dev.elves.contracts.DataRequest;
import dev.elves.contracts.Envelope;
import dev.elves.contracts.MessageTypes;
import dev.elves.contracts.messaging.EnvelopeMessageConverter;
import dev.elves.contracts.messaging.PoisonMessageException;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

import tools.jackson.databind.json.JsonMapper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Which messages become which activity-log rows, and which are poison. */
class LogMessagesTest {

	private final EnvelopeMessageConverter converter = new EnvelopeMessageConverter(JsonMapper.builder().build());

	private final LogBatchListener listener = new LogBatchListener(null, this.converter, null, null,
			new SimpleMeterRegistry());

	@Test
	void aDataRequestIsTheGetDataLogAndCarriesTheRequest() {
		DataRequest request = new DataRequest("KTLX", LocalDate.of(2024, 5, 20), LocalTime.of(10, 0),
				LocalTime.of(11, 0));
		UUID id = UUID.randomUUID();

		NewLog log = this.listener.toLog(Envelope.create(id, MessageTypes.DATA_REQUESTED, "alice", "t",
				this.converter.tree(request)));

		assertThat(log).isEqualTo(new NewLog(id, "alice", "getData", id, "t", log.time(), request));
	}

	@Test
	void anActivityLogKeepsItsEndpointAndRequest() {
		UUID request = UUID.randomUUID();
		NewLog log = this.listener.toLog(Envelope.create(UUID.randomUUID(), MessageTypes.ACTIVITY_LOGGED, "bob", null,
				this.converter.tree(new Activity("getStatus", request))));

		assertThat(log.endpoint()).isEqualTo("getStatus");
		assertThat(log.requestId()).isEqualTo(request);
		assertThat(log.request()).isNull();
	}

	@Test
	void messagesThatCanNeverBeStoredArePoison() {
		assertThatThrownBy(() -> this.listener.toLog(Envelope.create(UUID.randomUUID(), MessageTypes.ACTIVITY_LOGGED,
				null, null, this.converter.tree(new Activity("getStatus", null)))))
			.isInstanceOf(PoisonMessageException.class)
			.hasMessageEndingWith("has no userId");
		assertThatThrownBy(() -> this.listener.toLog(Envelope.create(UUID.randomUUID(), MessageTypes.PLOT_STARTED,
				"bob", null, this.converter.tree(new Activity("getStatus", null)))))
			.isInstanceOf(PoisonMessageException.class)
			.hasMessageContaining("not an activity log");
		assertThatThrownBy(() -> this.listener.toLog(Envelope.create(UUID.randomUUID(), MessageTypes.ACTIVITY_LOGGED,
				"bob", "x".repeat(1_000_000), this.converter.tree(new Activity("getStatus", null)))))
			.isInstanceOf(PoisonMessageException.class)
			.hasMessageContaining("testId");
		assertThatThrownBy(() -> this.listener.toLog(Envelope.create(UUID.randomUUID(), MessageTypes.DATA_REQUESTED,
				"bob", null, this.converter.tree(new Activity("getStatus", null)))))
			.isInstanceOf(PoisonMessageException.class);
		// Stored, a NUL would fail its whole batch at every delivery.
		assertThatThrownBy(() -> this.listener.toLog(Envelope.create(UUID.randomUUID(), MessageTypes.ACTIVITY_LOGGED,
				"bob\u0000", null, this.converter.tree(new Activity("getStatus", null)))))
			.isInstanceOf(PoisonMessageException.class)
			.hasMessageEndingWith("has a NUL character in userId");
	}

}
