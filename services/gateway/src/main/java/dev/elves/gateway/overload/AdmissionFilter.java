package dev.elves.gateway.overload;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

import dev.elves.contracts.MetricNames;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import org.springframework.http.HttpHeaders;
import org.springframework.http.MediaType;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * Admission control, first in the chain (before the token is even checked): at most
 * {@code reads} reads and {@code writes} getData requests are worked on at once; a request that
 * finds no place within {@code maxWait} is refused at once ({@link CapacityRefusal}). Past
 * its capacity the gateway thus refuses fast what it cannot serve and keeps the latency of what
 * it accepts, instead of queueing every request until clients time out (and logging reads
 * nobody waits for any more). Separate bulkheads: reads cannot take getData's places.
 * Every request to the API port takes a place, whatever its path: a path test here would see the
 * raw URI while the router matches it decoded ({@code /%61pi/v1/history} is getHistory), so a
 * spelling it did not foresee would skip the limit. Health and metrics are on the management
 * port, where this filter is not registered.
 */
class AdmissionFilter extends OncePerRequestFilter {

	private final Bulkhead reads;

	private final Bulkhead writes;

	private final long waitNanos;

	private record Bulkhead(String name, Semaphore places, Counter refused) {
	}

	AdmissionFilter(AdmissionProperties properties, MeterRegistry meters) {
		this.reads = bulkhead("reads", properties.reads(), meters);
		this.writes = bulkhead("getData", properties.writes(), meters);
		this.waitNanos = properties.maxWait().toNanos();
	}

	private static Bulkhead bulkhead(String name, int places, MeterRegistry meters) {
		return new Bulkhead(name, new Semaphore(places), meters.counter(MetricNames.REQUESTS_REFUSED, "bulkhead", name));
	}

	@Override
	protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
			throws ServletException, IOException {
		Bulkhead bulkhead = "GET".equals(request.getMethod()) ? this.reads : this.writes;
		if (!enter(bulkhead)) {
			bulkhead.refused().increment();
			refuse(response, bulkhead.name());
			return;
		}
		try {
			chain.doFilter(request, response);
		}
		finally {
			bulkhead.places().release();
		}
	}

	private boolean enter(Bulkhead bulkhead) {
		try {
			return bulkhead.places().tryAcquire(this.waitNanos, TimeUnit.NANOSECONDS);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			return false;
		}
	}

	private static void refuse(HttpServletResponse response, String bulkhead) throws IOException {
		response.setStatus(CapacityRefusal.STATUS.value());
		response.setHeader(HttpHeaders.RETRY_AFTER, CapacityRefusal.RETRY_AFTER_SECONDS);
		response.setContentType(MediaType.APPLICATION_JSON_VALUE);
		byte[] body = ("{\"error\":\"the gateway is at capacity (" + bulkhead + "), try again\"}")
			.getBytes(StandardCharsets.UTF_8);
		response.setContentLength(body.length);
		response.getOutputStream().write(body);
	}

}
