package dev.elves.registry;

import dev.elves.contracts.messaging.MessagingConfiguration;

import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;

/** The shared topology and JSON converter (kept off the application class so slices stay small). */
@Configuration(proxyBeanMethods = false)
@Import(MessagingConfiguration.class)
class MessagingSetup {
}
