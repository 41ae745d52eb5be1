package dev.elves.web;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import org.springframework.boot.tomcat.servlet.TomcatServletWebServerFactory;
import org.springframework.boot.web.server.WebServer;
import org.springframework.context.event.ContextClosedEvent;
import org.springframework.context.support.GenericApplicationContext;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A real Tomcat: a keep-alive client that goes quiet keeps its connection until the drain
 * begins, and is disconnected before the drain would end.
 */
class IdleConnectionsEndWithinTheDrainTest {

	private WebServer server;

	private Thread drainThread;

	@AfterEach
	void stop() throws InterruptedException {
		if (this.drainThread != null) {
			this.drainThread.join();
		}
		if (this.server != null) {
			this.server.stop();
		}
	}

	private int start(ShutdownDrain drain) {
		TomcatServletWebServerFactory factory = new TomcatServletWebServerFactory(0);
		new IdleConnectionsEndWithinTheDrain().idleConnectionsEndWithinTheDrain(drain).customize(factory);
		this.server = factory.getWebServer((context) -> context.addServlet("ok", new HttpServlet() {
			@Override
			protected void doGet(HttpServletRequest request, HttpServletResponse response) {
				response.setStatus(204);
			}
		}).addMapping("/"));
		this.server.start();
		return this.server.getPort();
	}

	/** A connection that has had one answer, kept alive, and now waits for its next request. */
	private static Socket answeredOnce(int port) throws Exception {
		Socket socket = new Socket("127.0.0.1", port);
		OutputStream out = socket.getOutputStream();
		out.write("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
		out.flush();
		InputStream in = socket.getInputStream();
		String head = "";
		while (!head.endsWith("\r\n\r\n")) {
			head += (char) in.read();
		}
		assertThat(head).startsWith("HTTP/1.1 204").doesNotContain("Connection: close");
		return socket;
	}

	/** Milliseconds until the server closes the quiet connection (-1: still open after {@code deadline}). */
	private static long closedAfter(Socket socket, Duration deadline) throws Exception {
		socket.setSoTimeout((int) deadline.toMillis());
		long since = System.nanoTime();
		try {
			return (socket.getInputStream().read() == -1) ? Duration.ofNanos(System.nanoTime() - since).toMillis() : -1;
		}
		catch (SocketTimeoutException ex) {
			return -1;
		}
	}

	private void beginDrain(ShutdownDrain drain) {
		this.drainThread = new Thread(() -> drain.onApplicationEvent(new ContextClosedEvent(new GenericApplicationContext())));
		this.drainThread.start();
	}

	@Test
	void beforeTheDrainAQuietConnectionStaysOpenLongerThanHalfTheDrain() throws Exception {
		// Closing idle connections at all times fails clients' POSTs that race the close.
		int port = start(new ShutdownDrain(Duration.ofSeconds(2)));
		try (Socket socket = answeredOnce(port)) {
			assertThat(closedAfter(socket, Duration.ofSeconds(3))).isEqualTo(-1L);
		}
	}

	@Test
	void whenTheDrainBeginsAQuietConnectionEndsBeforeTheDrainWould() throws Exception {
		// Half of the 4 s drain, plus up to about a second until Tomcat's poller looks:
		// the connection, quiet since before the drain, ends well before the drain would.
		ShutdownDrain drain = new ShutdownDrain(Duration.ofSeconds(4));
		int port = start(drain);
		try (Socket socket = answeredOnce(port)) {
			beginDrain(drain);
			assertThat(closedAfter(socket, Duration.ofSeconds(10))).isBetween(0L, 3500L);
		}
	}

	@Test
	void withoutADrainTomcatKeepsItsOwnKeepAliveTimeout() throws Exception {
		ShutdownDrain noDrain = new ShutdownDrain(Duration.ZERO);
		int port = start(noDrain);
		try (Socket socket = answeredOnce(port)) {
			beginDrain(noDrain);
			assertThat(closedAfter(socket, Duration.ofSeconds(3))).isEqualTo(-1L);
		}
	}

}
