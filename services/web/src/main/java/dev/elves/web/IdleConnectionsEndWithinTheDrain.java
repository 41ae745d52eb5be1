package dev.elves.web;

import java.time.Duration;

import org.springframework.boot.tomcat.servlet.TomcatServletWebServerFactory;
import org.springframework.boot.web.server.WebServerFactoryCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Once the {@link ShutdownDrain} begins, Tomcat ends every keep-alive connection that waits
 * longer than half the drain for its next request, the ones already waiting included. A client
 * that sends nothing while the replica drains never hears {@code Connection: close}; if its
 * connection were still open when the web server stops, a request it sent just then would be
 * lost unanswered.
 * <p>
 * Only during the drain: closing an idle connection always races with the client's next
 * request on it, which a client may retry if it is a GET but not if it is a POST. A short
 * keep-alive timeout at all times would run that race on every pause of every client; during
 * the drain it is run once per quiet connection (the evidence: docs/decisions.md).
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
		return (factory) -> {
			if (drain.isZero()) {
				return;
			}
			factory.setProtocol(DrainableHttp11NioProtocol.class.getName());
			factory.addConnectorCustomizers((connector) -> {
				if (connector.getProtocolHandler() instanceof DrainableHttp11NioProtocol protocol) {
					shutdownDrain.whenItBegins(() -> protocol.endIdleConnectionsAfter(drain.dividedBy(2)));
				}
			});
		};
	}

}
