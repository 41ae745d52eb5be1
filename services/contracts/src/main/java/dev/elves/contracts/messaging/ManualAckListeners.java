package dev.elves.contracts.messaging;

import org.springframework.amqp.core.AcknowledgeMode;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.amqp.support.converter.MessageConverter;
import org.springframework.amqp.rabbit.config.SimpleRabbitListenerContainerFactory;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.boot.amqp.autoconfigure.SimpleRabbitListenerContainerFactoryConfigurer;

/**
 * The consumer settings every Elves listener shares: Boot's listener settings, then manual acks
 * (a listener settles each delivery through {@link Deliveries} once its work is durable), a
 * failure never silently requeues, a bounded prefetch, and a queue that is not there yet (the
 * broker just restarted) is waited for instead of stopping the service. Listeners take the raw
 * {@link Message} and decode it themselves ({@link Deliveries#read}), so the container must not
 * convert anything: a converter that throws on a poison message would leave it unacked, and
 * with a bounded prefetch a few such messages would stop the consumer for good.
 */
public final class ManualAckListeners {

	/** Hands the listener the message as it came; decoding (and rejecting poison) is the listener's. */
	static final MessageConverter RAW = new MessageConverter() {
		@Override
		public Message toMessage(Object object, MessageProperties properties) {
			throw new UnsupportedOperationException("listener containers only receive");
		}

		@Override
		public Object fromMessage(Message message) {
			return message;
		}
	};

	private ManualAckListeners() {
	}

	public static SimpleRabbitListenerContainerFactory factory(SimpleRabbitListenerContainerFactoryConfigurer configurer,
			ConnectionFactory connectionFactory, int concurrency, int prefetch) {
		SimpleRabbitListenerContainerFactory factory = new SimpleRabbitListenerContainerFactory();
		configurer.configure(factory, connectionFactory);
		factory.setMessageConverter(RAW);
		factory.setAcknowledgeMode(AcknowledgeMode.MANUAL);
		factory.setDefaultRequeueRejected(false);
		factory.setMissingQueuesFatal(false);
		factory.setConcurrentConsumers(concurrency);
		factory.setPrefetchCount(prefetch);
		return factory;
	}

}
