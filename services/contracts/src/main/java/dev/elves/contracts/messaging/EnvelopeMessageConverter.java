package dev.elves.contracts.messaging;

import dev.elves.contracts.Envelope;

import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageDeliveryMode;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.amqp.support.converter.MessageConversionException;
import org.springframework.amqp.support.converter.MessageConverter;

import tools.jackson.core.JacksonException;
import tools.jackson.databind.json.JsonMapper;

/**
 * The one JSON converter of the system: every message is an {@link Envelope}, persistent,
 * with the envelope id as AMQP message id (so the broker's tools show the idempotency key).
 */
public final class EnvelopeMessageConverter implements MessageConverter {

	private static final int MAX_TEXT_IN_ERROR = 120;

	private final JsonMapper mapper;

	public EnvelopeMessageConverter(JsonMapper mapper) {
		this.mapper = mapper;
	}

	@Override
	public Message toMessage(Object object, MessageProperties properties) {
		if (!(object instanceof Envelope envelope)) {
			throw new MessageConversionException("only Envelope is sent, not " + object.getClass().getName());
		}
		properties.setContentType(MessageProperties.CONTENT_TYPE_JSON);
		properties.setContentEncoding("UTF-8");
		properties.setDeliveryMode(MessageDeliveryMode.PERSISTENT);
		properties.setMessageId(envelope.id().toString());
		properties.setType(envelope.type());
		return new Message(this.mapper.writeValueAsBytes(envelope), properties);
	}

	/**
	 * Reads an envelope, or throws {@link PoisonMessageException} naming what is wrong: such a
	 * message can never succeed and belongs in the dead-letter queue.
	 */
	@Override
	public Envelope fromMessage(Message message) {
		Envelope envelope;
		try {
			envelope = this.mapper.readValue(message.getBody(), Envelope.class);
		}
		catch (JacksonException ex) {
			throw new PoisonMessageException("not an envelope: " + shorten(ex.getOriginalMessage()));
		}
		if (envelope == null) {
			throw new PoisonMessageException("not an envelope: empty body");
		}
		if (envelope.id() == null) {
			throw new PoisonMessageException("envelope without id");
		}
		if (envelope.type() == null || envelope.type().isBlank()) {
			throw new PoisonMessageException("envelope " + envelope.id() + " without type");
		}
		return envelope;
	}

	/** Reads the payload of an envelope as {@code type}, or throws {@link PoisonMessageException}. */
	public <T> T data(Envelope envelope, Class<T> type) {
		if (envelope.data() == null || envelope.data().isNull()) {
			throw new PoisonMessageException("envelope " + envelope.id() + " (" + envelope.type() + ") without data");
		}
		try {
			return this.mapper.treeToValue(envelope.data(), type);
		}
		catch (JacksonException ex) {
			throw new PoisonMessageException("envelope " + envelope.id() + " (" + envelope.type() + ") has bad data: "
					+ shorten(ex.getOriginalMessage()));
		}
	}

	/** Turns a payload into the {@code data} of an envelope. */
	public tools.jackson.databind.JsonNode tree(Object payload) {
		return this.mapper.valueToTree(payload);
	}

	private static String shorten(String text) {
		if (text == null) {
			return "";
		}
		return (text.length() <= MAX_TEXT_IN_ERROR) ? text : text.substring(0, MAX_TEXT_IN_ERROR) + "...";
	}

}
