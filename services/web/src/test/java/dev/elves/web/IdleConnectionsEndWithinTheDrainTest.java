package dev.elves.web;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import org.springframework.boot.tomcat.servlet.TomcatServletWebServerFactory;
import org.springframework.boot.web.server.WebServer;

import static org.assertj.core.api.Assertions.assertThat;

/** A real Tomcat: a keep-alive client that goes quiet is disconnected before the drain would end. */
class IdleConnectionsEndWithinTheDrainTest {

	private WebServer server;

	@AfterEach
	void stop() {
		if (this.server != null) {
			this.server.stop();
		}
	}

	private int start(Duration drain) {
		TomcatServletWebServerFactory factory = new TomcatServletWebServerFactory(0);
		new IdleConnectionsEndWithinTheDrain().idleConnectionsEndWithinTheDrain(new ShutdownDrain(drain))
			.customize(factory);
		this.server = factory.getWebServer((context) -> context.addServlet("ok", new HttpServlet() {
			@Override
			protected void doGet(HttpServletRequest request, HttpServletResponse response) {
				response.setStatus(204);
			}
		}).addMapping("/"));
		this.server.start();
		return this.server.getPort();
	}

	/** Milliseconds from the end of one answer until the server closes the idle connection (-1: not within the deadline). */
	private static long idleUntilClosed(int port, Duration deadline) throws Exception {
		try (Socket socket = new Socket("127.0.0.1", port)) {
			socket.setSoTimeout((int) deadline.toMillis());
			OutputStream out = socket.getOutputStream();
			out.write("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
			out.flush();
			InputStream in = socket.getInputStream();
			String head = "";
			while (!head.endsWith("\r\n\r\n")) {
				head += (char) in.read();
			}
			assertThat(head).startsWith("HTTP/1.1 204").doesNotContain("Connection: close");
			long answered = System.nanoTime();
			try {
				return (in.read() == -1) ? Duration.ofNanos(System.nanoTime() - answered).toMillis() : -1;
			}
			catch (java.net.SocketTimeoutException ex) {
				return -1;
			}
		}
	}

	@Test
	void withADrainAnIdleKeepAliveConnectionEndsBeforeTheDrainWould() throws Exception {
		// Tomcat checks idle connections about once a second: closed after 2 s or a little more,
		// well before the 4 s drain would end (the default keep-alive timeout is a minute).
		int port = start(Duration.ofSeconds(4));
		assertThat(idleUntilClosed(port, Duration.ofSeconds(10))).isBetween(1000L, 4000L);
	}

	@Test
	void withoutADrainTomcatKeepsItsOwnKeepAliveTimeout() throws Exception {
		int port = start(Duration.ZERO);
		assertThat(idleUntilClosed(port, Duration.ofSeconds(3))).isEqualTo(-1L);
	}

}
