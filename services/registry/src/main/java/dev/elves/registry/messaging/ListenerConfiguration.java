package dev.elves.registry.messaging;

import dev.elves.registry.RegistryProperties;

import org.springframework.amqp.core.AcknowledgeMode;
import org.springframework.amqp.rabbit.config.SimpleRabbitListenerContainerFactory;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.boot.amqp.autoconfigure.SimpleRabbitListenerContainerFactoryConfigurer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The registry's consumers: manual acks after the commit, bounded prefetch, and no start until
 * the schema is migrated ({@code SchemaMigrator} starts them).
 */
@Configuration(proxyBeanMethods = false)
class ListenerConfiguration {

	/** Activity logs arrive by the thousand: one transaction per batch. */
	@Bean
	SimpleRabbitListenerContainerFactory logBatchContainerFactory(SimpleRabbitListenerContainerFactoryConfigurer configurer,
			ConnectionFactory connectionFactory, RegistryProperties properties) {
		SimpleRabbitListenerContainerFactory factory = common(configurer, connectionFactory);
		factory.setConcurrentConsumers(properties.concurrency());
		factory.setPrefetchCount(properties.prefetch());
		factory.setBatchListener(true);
		factory.setConsumerBatchEnabled(true);
		factory.setBatchSize(properties.batchSize());
		factory.setReceiveTimeout(properties.batchWait().toMillis());
		return factory;
	}

	/** Results carry a PNG each: one at a time, few in flight. */
	@Bean
	SimpleRabbitListenerContainerFactory resultContainerFactory(SimpleRabbitListenerContainerFactoryConfigurer configurer,
			ConnectionFactory connectionFactory, RegistryProperties properties) {
		SimpleRabbitListenerContainerFactory factory = common(configurer, connectionFactory);
		factory.setConcurrentConsumers(properties.resultConcurrency());
		factory.setPrefetchCount(properties.resultPrefetch());
		return factory;
	}

	private static SimpleRabbitListenerContainerFactory common(SimpleRabbitListenerContainerFactoryConfigurer configurer,
			ConnectionFactory connectionFactory) {
		SimpleRabbitListenerContainerFactory factory = new SimpleRabbitListenerContainerFactory();
		configurer.configure(factory, connectionFactory);
		factory.setAcknowledgeMode(AcknowledgeMode.MANUAL);
		factory.setDefaultRequeueRejected(false);
		factory.setMissingQueuesFatal(false);
		factory.setAutoStartup(false);
		return factory;
	}

}
