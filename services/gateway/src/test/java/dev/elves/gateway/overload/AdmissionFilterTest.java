package dev.elves.gateway.overload;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

import org.springframework.mock.web.MockFilterChain;
import org.springframework.mock.web.MockHttpServletRequest;
import org.springframework.mock.web.MockHttpServletResponse;

import static org.assertj.core.api.Assertions.assertThat;

/** A full bulkhead refuses at once with 429 and Retry-After; reads and getData have their own. */
class AdmissionFilterTest {

	private final SimpleMeterRegistry meters = new SimpleMeterRegistry();

	private final AdmissionFilter filter = new AdmissionFilter(new AdmissionProperties(1, 1, Duration.ofMillis(10)),
			this.meters);

	private final CountDownLatch entered = new CountDownLatch(1);

	private final CountDownLatch release = new CountDownLatch(1);

	/** Holds a place in the bulkhead of `method` until released. */
	private CompletableFuture<Void> holding(String method) {
		return CompletableFuture.runAsync(() -> {
			try {
				this.filter.doFilter(new MockHttpServletRequest(method, "/api/v1/history"), new MockHttpServletResponse(),
						(request, response) -> {
							this.entered.countDown();
							try {
								this.release.await(10, TimeUnit.SECONDS);
							}
							catch (InterruptedException ex) {
								Thread.currentThread().interrupt();
							}
						});
			}
			catch (Exception ex) {
				throw new IllegalStateException(ex);
			}
		});
	}

	private MockHttpServletResponse call(String method, String path) throws Exception {
		MockHttpServletResponse response = new MockHttpServletResponse();
		this.filter.doFilter(new MockHttpServletRequest(method, path), response, new MockFilterChain());
		return response;
	}

	@Test
	void aFullBulkheadRefusesAtOnceWithRetryAfterAndTheOtherStillServes() throws Exception {
		CompletableFuture<Void> read = holding("GET");
		assertThat(this.entered.await(10, TimeUnit.SECONDS)).isTrue();

		MockHttpServletResponse refused = call("GET", "/api/v1/status/x");
		assertThat(refused.getStatus()).isEqualTo(429);
		assertThat(refused.getHeader("Retry-After")).isEqualTo("1");
		assertThat(refused.getContentAsString()).contains("at capacity (reads)");
		assertThat(this.meters.counter("elves.gateway.requests.refused", "bulkhead", "reads").count()).isEqualTo(1);

		assertThat(call("POST", "/api/v1/data").getStatus()).isEqualTo(200);
		// Every path of the API port takes a place, not only those spelt /api/.
		assertThat(call("GET", "/openapi.yaml").getStatus()).isEqualTo(429);

		this.release.countDown();
		read.get(10, TimeUnit.SECONDS);
		assertThat(call("GET", "/api/v1/status/x").getStatus()).isEqualTo(200);
	}

}
