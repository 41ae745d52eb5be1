package dev.elves.ingestor.jobs;

import dev.elves.contracts.messaging.ManualAckListeners;
import dev.elves.ingestor.IngestorProperties;

import org.springframework.amqp.rabbit.config.SimpleRabbitListenerContainerFactory;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.boot.amqp.autoconfigure.SimpleRabbitListenerContainerFactoryConfigurer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Jobs in parallel = concurrency; a small prefetch so that a replica takes only what it can
 * work on and the rest waits in the queue for other replicas (and is visible there).
 */
@Configuration(proxyBeanMethods = false)
class ListenerConfiguration {

	@Bean
	SimpleRabbitListenerContainerFactory jobContainerFactory(SimpleRabbitListenerContainerFactoryConfigurer configurer,
			ConnectionFactory connectionFactory, IngestorProperties properties) {
		return ManualAckListeners.factory(configurer, connectionFactory, properties.concurrency(),
				properties.prefetch());
	}

}
