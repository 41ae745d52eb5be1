package dev.elves.web;

import java.time.Duration;

import org.apache.coyote.http11.Http11NioProtocol;
import org.apache.tomcat.util.net.NioChannel;
import org.apache.tomcat.util.net.SocketWrapperBase;

/**
 * Tomcat's NIO connector, able to end the keep-alive connections that wait for a next request
 * when told to, the ones already waiting included. Tomcat's own keep-alive timeout applies to a
 * connection only from its next wait on; this sets the read timeout of every open connection,
 * which Tomcat's poller checks about once a second. Tomcat creates it by its class name
 * ({@code TomcatServletWebServerFactory.setProtocol}), hence public with a public constructor.
 */
public class DrainableHttp11NioProtocol extends Http11NioProtocol {

	/**
	 * From now on a connection that waits longer than {@code idle} for its next request is
	 * closed. A request being read at this moment also gets {@code idle} between its bytes.
	 */
	public void endIdleConnectionsAfter(Duration idle) {
		int millis = Math.toIntExact(Math.max(1, idle.toMillis()));
		setKeepAliveTimeout(millis);
		for (SocketWrapperBase<NioChannel> connection : getEndpoint().getConnections()) {
			connection.setReadTimeout(millis);
		}
	}

}
