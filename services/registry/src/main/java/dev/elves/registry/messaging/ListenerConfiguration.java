package dev.elves.registry.messaging;

import dev.elves.contracts.messaging.ManualAckListeners;
import dev.elves.registry.RegistryProperties;

import org.springframework.amqp.rabbit.config.SimpleRabbitListenerContainerFactory;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.boot.amqp.autoconfigure.SimpleRabbitListenerContainerFactoryConfigurer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The registry's consumers: the shared manual-ack settings, and no start until the schema is
 * migrated ({@code SchemaMigrator} starts them).
 */
@Configuration(proxyBeanMethods = false)
class ListenerConfiguration {

	/** Activity logs arrive by the thousand: one transaction per batch. */
	@Bean
	SimpleRabbitListenerContainerFactory logBatchContainerFactory(SimpleRabbitListenerContainerFactoryConfigurer configurer,
			ConnectionFactory connectionFactory, RegistryProperties properties) {
		SimpleRabbitListenerContainerFactory factory = ManualAckListeners.factory(configurer, connectionFactory,
				properties.concurrency(), properties.prefetch());
		factory.setAutoStartup(false);
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
		SimpleRabbitListenerContainerFactory factory = ManualAckListeners.factory(configurer, connectionFactory,
				properties.resultConcurrency(), properties.resultPrefetch());
		factory.setAutoStartup(false);
		return factory;
	}

}
