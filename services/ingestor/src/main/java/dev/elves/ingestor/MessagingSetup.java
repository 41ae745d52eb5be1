package dev.elves.ingestor;

import dev.elves.contracts.messaging.PublisherConfiguration;

import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;

/** The shared topology and the confirmed publisher. */
@Configuration(proxyBeanMethods = false)
@Import(PublisherConfiguration.class)
class MessagingSetup {
}
