package dev.elves.web;

import org.springframework.boot.tomcat.TomcatConnectorCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Tomcat refuses an encoded slash or backslash ({@code %2F}, {@code %5C}) in a path with its own
 * HTML page, before any filter runs (found by the OpenAPI fuzz runs). Passed through as they
 * are, they reach the application and get our JSON error: the gateway's security firewall
 * refuses them naming the path; in the registry, behind its key, they stay characters of one
 * segment, so no route matches (404) or a path variable holds them (an id nobody has, 404).
 */
@Configuration(proxyBeanMethods = false)
public class EncodedSlashesReachTheApplication {

	@Bean
	TomcatConnectorCustomizer encodedSlashesReachTheApplication() {
		return (connector) -> {
			connector.setEncodedSolidusHandling("passthrough");
			connector.setEncodedReverseSolidusHandling("passthrough");
		};
	}

}
