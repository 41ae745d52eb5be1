package dev.elves.gateway;

import dev.elves.contracts.messaging.PublisherConfiguration;

import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;

/** The shared topology and the confirmed publisher (kept off the application class so web slices stay small). */
@Configuration(proxyBeanMethods = false)
@Import(PublisherConfiguration.class)
class MessagingSetup {
}
