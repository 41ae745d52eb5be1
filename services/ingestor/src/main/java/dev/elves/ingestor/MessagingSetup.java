package dev.elves.ingestor;

import dev.elves.contracts.messaging.PublisherConfiguration;

import org.springframework.boot.amqp.autoconfigure.RabbitTemplateCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;

/** The shared topology and the confirmed publisher. */
@Configuration(proxyBeanMethods = false)
@Import(PublisherConfiguration.class)
class MessagingSetup {

	/**
	 * Results go out on a connection of their own: when the broker blocks publishers (memory or
	 * disk alarm) it blocks the whole connection, and a consumer on the same one could then not
	 * even acknowledge what it finished.
	 */
	@Bean
	RabbitTemplateCustomizer separatePublisherConnection() {
		return (template) -> template.setUsePublisherConnection(true);
	}

}
