package dev.elves.gateway.registry;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import com.sun.net.httpserver.HttpServer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.web.client.RestClient;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Against a real HTTP server on loopback: the answers, the encoding and the timeouts. */
class RegistryClientTest {

	private HttpServer server;

	private static final String KEY = "service-key-for-the-test";

	private final AtomicReference<URI> lastUri = new AtomicReference<>();

	private final AtomicReference<String> lastKey = new AtomicReference<>();

	private final CountDownLatch release = new CountDownLatch(1);

	private final AtomicInteger slowCalls = new AtomicInteger();

	@BeforeEach
	void start() throws IOException {
		this.server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
		this.server.createContext("/api/v1/users/", (exchange) -> {
			this.lastUri.set(exchange.getRequestURI());
			this.lastKey.set(exchange.getRequestHeaders().getFirst("X-Elves-Service-Key"));
			byte[] body = "{\"id\":\"x\"}".getBytes(StandardCharsets.UTF_8);
			exchange.sendResponseHeaders(200, body.length);
			exchange.getResponseBody().write(body);
			exchange.close();
		});
		this.server.createContext("/api/v1/missing", (exchange) -> {
			exchange.sendResponseHeaders(404, -1);
			exchange.close();
		});
		this.server.createContext("/api/v1/broken", (exchange) -> {
			byte[] body = "database unavailable".getBytes(StandardCharsets.UTF_8);
			exchange.sendResponseHeaders(503, body.length);
			exchange.getResponseBody().write(body);
			exchange.close();
		});
		this.server.createContext("/api/v1/slow", (exchange) -> {
			this.slowCalls.incrementAndGet();
			try {
				this.release.await(5, TimeUnit.SECONDS);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
			exchange.sendResponseHeaders(200, -1);
			exchange.close();
		});
		this.server.setExecutor(java.util.concurrent.Executors.newCachedThreadPool());
		this.server.start();
	}

	@AfterEach
	void stop() {
		this.release.countDown();
		this.server.stop(0);
	}

	/** Patient enough that a loaded machine never turns an answer into a timeout. */
	private RegistryClient client(URI url) {
		return client(url, Duration.ofSeconds(10));
	}

	private RegistryClient client(URI url, Duration readTimeout) {
		return new RegistryClient(RestClient.builder(), new RegistryProperties(url, Duration.ofMillis(500), readTimeout, KEY, 32, Duration.ofMillis(50)),
				new SimpleMeterRegistry());
	}

	private URI url() {
		return URI.create("http://127.0.0.1:" + this.server.getAddress().getPort());
	}

	@Test
	void pathAndQueryValuesAreEncodedSoAUserIdCannotChangeTheRequest() {
		var answer = client(url()).json("/api/v1/users/{id}", Map.of("id", "a/b?c"), Map.of("user", "x&all=true"),
				null);
		assertThat(answer).contains("{\"id\":\"x\"}");
		assertThat(this.lastUri.get().getRawPath()).isEqualTo("/api/v1/users/a%2Fb%3Fc");
		assertThat(this.lastUri.get().getRawQuery()).isEqualTo("user=x%26all%3Dtrue");
		assertThat(this.lastKey.get()).as("the service credential goes along").isEqualTo(KEY);
	}

	@Test
	void a404IsEmpty() {
		assertThat(client(url()).json("/api/v1/missing", Map.of(), Map.of(), null)).isEmpty();
	}

	@Test
	void aRegistryErrorIsUnavailableWithItsReason() {
		assertThatThrownBy(() -> client(url()).json("/api/v1/broken", Map.of(), Map.of(), null))
			.isInstanceOf(RegistryUnavailableException.class)
			.hasMessageContaining("503")
			.hasMessageContaining("database unavailable");
	}

	@Test
	void aSlowRegistryIsATimeoutWithinTheReadTimeout() {
		long started = System.nanoTime();
		assertThatThrownBy(() -> client(url(), Duration.ofMillis(300)).json("/api/v1/slow", Map.of(), Map.of(), null))
			.isInstanceOf(RegistryTimeoutException.class);
		assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(3));
	}

	@Test
	void aClosedPortIsUnavailable() throws IOException {
		int port;
		try (ServerSocket socket = new ServerSocket(0)) {
			port = socket.getLocalPort();
		}
		assertThatThrownBy(
				() -> client(URI.create("http://127.0.0.1:" + port)).json("/api/v1/logs", Map.of(), Map.of(), null))
			.isInstanceOf(RegistryUnavailableException.class)
			.hasMessageContaining("unreachable");
	}

	@Test
	void aFullBulkheadRefusesAtOnceAndFreesItsPlaceAfterwards() throws Exception {
		RegistryClient client = new RegistryClient(RestClient.builder(),
				new RegistryProperties(url(), Duration.ofMillis(500), Duration.ofSeconds(10), KEY, 1, Duration.ofMillis(20)),
				new SimpleMeterRegistry());
		CompletableFuture<?> slow = CompletableFuture
			.runAsync(() -> client.json("/api/v1/slow", Map.of(), Map.of(), null));
		// The slow call holds the only place once the server has it.
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
		while (this.slowCalls.get() == 0 && System.nanoTime() < deadline) {
			Thread.onSpinWait();
		}
		long started = System.nanoTime();
		assertThatThrownBy(() -> client.json("/api/v1/users/{id}", Map.of("id", "x"), Map.of(), null))
			.isInstanceOf(RegistryBusyException.class);
		assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(2));
		this.release.countDown();
		slow.get(10, TimeUnit.SECONDS);
		assertThat(client.json("/api/v1/users/{id}", Map.of("id", "x"), Map.of(), null)).isPresent();
	}

}
