package dev.elves.contracts.messaging;

import java.nio.charset.StandardCharsets;
import java.time.LocalDate;
import java.time.LocalTime;
import java.util.UUID;

import dev.elves.contracts.DataRequest;
import dev.elves.contracts.Envelope;
import dev.elves.contracts.MessageTypes;
import dev.elves.contracts.PlotOutcome;
import org.junit.jupiter.api.Test;

import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageDeliveryMode;
import org.springframework.amqp.core.MessageProperties;

import tools.jackson.databind.json.JsonMapper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class EnvelopeMessageConverterTest {

	private final EnvelopeMessageConverter converter = new EnvelopeMessageConverter(JsonMapper.builder().build());

	@Test
	void writesPersistentJsonWithTheEnvelopeIdAsMessageIdAndReadsItBack() {
		DataRequest request = new DataRequest("KTLX", LocalDate.of(2024, 5, 20), LocalTime.of(10, 0),
				LocalTime.of(11, 30));
		Envelope sent = Envelope.create(UUID.randomUUID(), MessageTypes.DATA_REQUESTED, "alice", "local/t/0",
				this.converter.tree(request));

		Message message = this.converter.toMessage(sent, new MessageProperties());
		Envelope received = this.converter.fromMessage(message);

		assertThat(message.getMessageProperties().getMessageId()).isEqualTo(sent.id().toString());
		assertThat(message.getMessageProperties().getDeliveryMode()).isEqualTo(MessageDeliveryMode.PERSISTENT);
		assertThat(new String(message.getBody(), StandardCharsets.UTF_8)).contains("\"date\":\"2024-05-20\"",
				"\"testId\":\"local/t/0\"");
		assertThat(received).isEqualTo(sent);
		assertThat(this.converter.data(received, DataRequest.class)).isEqualTo(request);
	}

	@Test
	void carriesPngBytesAsBase64() {
		byte[] png = { (byte) 0x89, 'P', 'N', 'G', 0, 1, 2 };
		Envelope sent = Envelope.create(UUID.randomUUID(), MessageTypes.PLOT_COMPLETED, "bob", null,
				this.converter.tree(PlotOutcome.completed(UUID.randomUUID(), png)));

		Envelope received = this.converter.fromMessage(this.converter.toMessage(sent, new MessageProperties()));

		assertThat(this.converter.data(received, PlotOutcome.class).png()).isEqualTo(png);
	}

	@Test
	void garbageIsPoisonWithAReason() {
		Message garbage = new Message("{not json".getBytes(StandardCharsets.UTF_8), new MessageProperties());
		assertThatThrownBy(() -> this.converter.fromMessage(garbage)).isInstanceOf(PoisonMessageException.class)
			.hasMessageStartingWith("not an envelope");
	}

	@Test
	void envelopeWithoutIdOrTypeIsPoison() {
		Message noId = new Message("{\"type\":\"data.requested\"}".getBytes(StandardCharsets.UTF_8),
				new MessageProperties());
		Message noType = new Message(("{\"id\":\"" + UUID.randomUUID() + "\"}").getBytes(StandardCharsets.UTF_8),
				new MessageProperties());
		assertThatThrownBy(() -> this.converter.fromMessage(noId)).isInstanceOf(PoisonMessageException.class)
			.hasMessage("envelope without id");
		assertThatThrownBy(() -> this.converter.fromMessage(noType)).isInstanceOf(PoisonMessageException.class)
			.hasMessageEndingWith("without type");
	}

	@Test
	void payloadOfTheWrongShapeIsPoison() {
		Envelope envelope = Envelope.create(UUID.randomUUID(), MessageTypes.DATA_REQUESTED, "alice", null,
				this.converter.tree(java.util.Map.of("date", "yesterday")));
		assertThatThrownBy(() -> this.converter.data(envelope, DataRequest.class))
			.isInstanceOf(PoisonMessageException.class)
			.hasMessageContaining("bad data");
	}

}
