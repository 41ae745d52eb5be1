package dev.elves.contracts.messaging;

import io.micrometer.core.instrument.MeterRegistry;

import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;

/** For services that publish (gateway, ingestor): the confirmed publisher on Boot's template. */
@Configuration(proxyBeanMethods = false)
@Import(MessagingConfiguration.class)
public class PublisherConfiguration {

	@Bean
	ConfirmedPublisher confirmedPublisher(RabbitTemplate template, MessagingProperties properties,
			MeterRegistry meters) {
		return new ConfirmedPublisher(template, properties, meters);
	}

}
