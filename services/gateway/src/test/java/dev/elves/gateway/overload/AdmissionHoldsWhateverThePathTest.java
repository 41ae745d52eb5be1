package dev.elves.gateway.overload;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import org.springframework.boot.tomcat.servlet.TomcatServletWebServerFactory;
import org.springframework.boot.web.server.WebServer;
import org.springframework.boot.web.servlet.FilterRegistrationBean;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * On a real Tomcat, with the admission filter registered as the gateway registers it: however a
 * path to the API is spelt, the call takes a place in the bulkhead. The API stands behind a
 * servlet mapped to {@code /api/*}: Tomcat maps decoded and normalised paths, as the router does.
 */
class AdmissionHoldsWhateverThePathTest {

	/** Spellings Tomcat maps to {@code /api/v1/history}; a raw-path test saw none of them as the API. */
	static final List<String> ROUTED = List.of("/%61pi/v1/history", "/api;/v1/history", "/api/v1;x=y/history",
			"/x/../api/v1/history", "/./api/v1/history", "//api/v1/history", "/api/v1/./history");

	/** Encoded slashes: Tomcat refuses them itself (400) before any filter. */
	static final List<String> REFUSED_BY_TOMCAT = List.of("/api%2Fv1/history", "/api%2fv1/history");

	private final CountDownLatch held = new CountDownLatch(1);

	private final CountDownLatch release = new CountDownLatch(1);

	private final AtomicInteger served = new AtomicInteger();

	private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

	private WebServer server;

	@AfterEach
	void stop() {
		this.release.countDown();
		if (this.server != null) {
			this.server.stop();
		}
	}

	/** The filter as the gateway registers it, with one place for reads. */
	private static FilterRegistrationBean<AdmissionFilter> admission() {
		return new AdmissionConfiguration().admissionFilter(new AdmissionProperties(1, 1, Duration.ofMillis(10)),
				new SimpleMeterRegistry());
	}

	/** {@link #admission()} in front of the API; {@code /api/hold} holds the place until released. */
	private int start() {
		HttpServlet api = new HttpServlet() {
			@Override
			protected void doGet(HttpServletRequest request, HttpServletResponse response) throws IOException {
				if ("/hold".equals(request.getPathInfo())) {
					AdmissionHoldsWhateverThePathTest.this.held.countDown();
					await(AdmissionHoldsWhateverThePathTest.this.release);
					return;
				}
				AdmissionHoldsWhateverThePathTest.this.served.incrementAndGet();
				response.getWriter().write("history");
			}
		};
		this.server = new TomcatServletWebServerFactory(0).getWebServer(admission(), (context) -> {
			context.addServlet("api", api).addMapping("/api/*");
		});
		this.server.start();
		return this.server.getPort();
	}

	private static void await(CountDownLatch latch) {
		try {
			latch.await(10, TimeUnit.SECONDS);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	private HttpResponse<String> get(int port, String path) throws Exception {
		HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
			.timeout(Duration.ofSeconds(10))
			.build();
		return this.client.send(request, HttpResponse.BodyHandlers.ofString());
	}

	@Test
	void theFilterIsRegisteredForEveryPath() {
		assertThat(admission().getUrlPatterns()).isEmpty();
		assertThat(admission().getServletNames()).isEmpty();
	}

	@Test
	void everySpellingReachesTheApiWhenThereIsRoom() throws Exception {
		int port = start();
		for (String path : ROUTED) {
			HttpResponse<String> answer = get(port, path);
			assertThat(answer.statusCode()).as(path).isEqualTo(200);
			assertThat(answer.body()).as(path).isEqualTo("history");
		}
		assertThat(this.served).hasValue(ROUTED.size());
	}

	@Test
	void withTheOnlyPlaceTakenEverySpellingIsRefused() throws Exception {
		int port = start();
		CompletableFuture<HttpResponse<String>> holder = CompletableFuture.supplyAsync(() -> {
			try {
				return get(port, "/api/hold");
			}
			catch (Exception ex) {
				throw new IllegalStateException(ex);
			}
		});
		assertThat(this.held.await(10, TimeUnit.SECONDS)).as("the first read holds the only place").isTrue();

		for (String path : ROUTED) {
			HttpResponse<String> answer = get(port, path);
			assertThat(answer.statusCode()).as(path).isEqualTo(429);
			assertThat(answer.body()).as(path).contains("at capacity (reads)");
		}
		for (String path : REFUSED_BY_TOMCAT) {
			assertThat(get(port, path).statusCode()).as(path).isIn(400, 429);
		}
		assertThat(this.served).as("calls that reached the API past a full bulkhead").hasValue(0);

		this.release.countDown();
		assertThat(holder.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
	}

}
