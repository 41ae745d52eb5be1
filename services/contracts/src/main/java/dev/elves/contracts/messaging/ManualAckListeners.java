package dev.elves.contracts.messaging;

import org.springframework.amqp.core.AcknowledgeMode;
import org.springframework.amqp.rabbit.config.SimpleRabbitListenerContainerFactory;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.boot.amqp.autoconfigure.SimpleRabbitListenerContainerFactoryConfigurer;

/**
 * The consumer settings every Elves listener shares: Boot's listener settings, then manual acks
 * (a listener settles each delivery through {@link Deliveries} once its work is durable), a
 * failure never silently requeues, a bounded prefetch, and a queue that is not there yet (the
 * broker just restarted) is waited for instead of stopping the service.
 */
public final class ManualAckListeners {

	private ManualAckListeners() {
	}

	public static SimpleRabbitListenerContainerFactory factory(SimpleRabbitListenerContainerFactoryConfigurer configurer,
			ConnectionFactory connectionFactory, int concurrency, int prefetch) {
		SimpleRabbitListenerContainerFactory factory = new SimpleRabbitListenerContainerFactory();
		configurer.configure(factory, connectionFactory);
		factory.setAcknowledgeMode(AcknowledgeMode.MANUAL);
		factory.setDefaultRequeueRejected(false);
		factory.setMissingQueuesFatal(false);
		factory.setConcurrentConsumers(concurrency);
		factory.setPrefetchCount(prefetch);
		return factory;
	}

}
