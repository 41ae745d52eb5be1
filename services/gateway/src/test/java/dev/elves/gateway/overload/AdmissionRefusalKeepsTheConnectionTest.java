package dev.elves.gateway.overload;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import org.springframework.boot.tomcat.servlet.TomcatServletWebServerFactory;
import org.springframework.boot.web.server.WebServer;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * On a real Tomcat: a client refused at capacity keeps its keep-alive connection, so an overload
 * does not turn every refusal into a new TCP connection (Tomcat closes one after any 503).
 */
class AdmissionRefusalKeepsTheConnectionTest {

	private final CountDownLatch entered = new CountDownLatch(1);

	private final CountDownLatch release = new CountDownLatch(1);

	private WebServer server;

	@AfterEach
	void stop() {
		this.release.countDown();
		if (this.server != null) {
			this.server.stop();
		}
	}

	/** Admission control with one place for reads, in front of an API that holds every call until released. */
	private int startWithOnePlace() {
		AdmissionFilter admission = new AdmissionFilter(new AdmissionProperties(1, 1, Duration.ofMillis(10)),
				new SimpleMeterRegistry());
		HttpServlet holding = new HttpServlet() {
			@Override
			protected void doGet(HttpServletRequest request, HttpServletResponse response) {
				AdmissionRefusalKeepsTheConnectionTest.this.entered.countDown();
				try {
					AdmissionRefusalKeepsTheConnectionTest.this.release.await(10, TimeUnit.SECONDS);
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
				}
			}
		};
		this.server = new TomcatServletWebServerFactory(0).getWebServer((context) -> {
			context.addFilter("admission", admission).addMappingForUrlPatterns(null, false, "/*");
			context.addServlet("holding", holding).addMapping("/*");
		});
		this.server.start();
		return this.server.getPort();
	}

	private static byte[] read(String path) {
		return ("GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1);
	}

	/** Reads one answer's status line and headers and skips its body (Content-Length). */
	private static List<String> answer(BufferedReader in) throws IOException {
		List<String> head = new ArrayList<>();
		for (String line = in.readLine(); line != null && !line.isEmpty(); line = in.readLine()) {
			head.add(line);
		}
		int length = head.stream()
			.filter((line) -> line.toLowerCase().startsWith("content-length:"))
			.mapToInt((line) -> Integer.parseInt(line.substring(line.indexOf(':') + 1).trim()))
			.findFirst()
			.orElse(0);
		in.skip(length);
		return head;
	}

	@Test
	void twoRefusalsArriveOnOneConnectionEachWithRetryAfter() throws Exception {
		int port = startWithOnePlace();
		try (Socket holder = new Socket("127.0.0.1", port); Socket socket = new Socket("127.0.0.1", port)) {
			holder.getOutputStream().write(read("/api/v1/history/held"));
			assertThat(this.entered.await(10, TimeUnit.SECONDS)).as("the first read holds the only place").isTrue();

			socket.setSoTimeout(10_000);
			OutputStream out = socket.getOutputStream();
			BufferedReader in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.ISO_8859_1));
			out.write(read("/api/v1/history"));
			List<String> first = answer(in);
			assertThat(first.get(0)).startsWith("HTTP/1.1 429");
			assertThat(first).contains("Retry-After: 1").noneMatch((line) -> line.equalsIgnoreCase("Connection: close"));

			out.write(read("/api/v1/history")); // the same connection: still open
			assertThat(answer(in).get(0)).startsWith("HTTP/1.1 429");
		}
	}

}
