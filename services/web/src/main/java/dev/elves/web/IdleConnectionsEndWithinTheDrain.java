package dev.elves.web;

import java.time.Duration;

import org.apache.coyote.http11.AbstractHttp11Protocol;

import org.springframework.boot.tomcat.servlet.TomcatServletWebServerFactory;
import org.springframework.boot.web.server.WebServerFactoryCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * With a {@link ShutdownDrain}, Tomcat ends a keep-alive connection that waits longer than half
 * the drain for its next request. A client that sends nothing while the replica drains never
 * hears {@code Connection: close}; if its connection were still open when the web server stops,
 * a request it sent just then would be lost unanswered (k6 saw EOF on a getData in a rolling
 * restart of the gateway, tier 2). Idle connections thus end during the drain, as at any
 * keep-alive timeout, and none is left when it ends.
 * <p>
 * For a service whose clients are users (the gateway). Not the registry: its one client, the
 * gateway's connection pool, keeps idle connections for its own eviction time and would find
 * them closed under it. Needs {@link ShutdownDrainConfiguration}'s drain.
 */
@Configuration(proxyBeanMethods = false)
public class IdleConnectionsEndWithinTheDrain {

	@Bean
	WebServerFactoryCustomizer<TomcatServletWebServerFactory> idleConnectionsEndWithinTheDrain(
			ShutdownDrain shutdownDrain) {
		Duration drain = shutdownDrain.duration();
		return (factory) -> factory.addConnectorCustomizers((connector) -> {
			if (!drain.isZero() && connector.getProtocolHandler() instanceof AbstractHttp11Protocol<?> http) {
				http.setKeepAliveTimeout((int) drain.dividedBy(2).toMillis());
			}
		});
	}

}
