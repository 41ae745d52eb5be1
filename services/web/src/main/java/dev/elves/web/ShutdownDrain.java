package dev.elves.web;

import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import org.springframework.context.ApplicationListener;
import org.springframework.context.event.ContextClosedEvent;
import org.springframework.http.HttpHeaders;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * Keeps answering for a while once shutdown begins, ending each connection after its answer,
 * before Spring's graceful shutdown pauses the web server.
 * <p>
 * Clients keep their keep-alive connections to a replica after it has left the Service's
 * rotation (a Kubernetes Service and the local kernel balancing both choose a replica per
 * connection), and a paused Tomcat answers every request on them 503. During the drain every
 * answer carries {@code Connection: close}, so each connection in use ends cleanly after its
 * current request and its client opens the next one to a replica that stays. Spring publishes
 * {@link ContextClosedEvent} before it stops the web server, so the drain runs in front of it.
 */
public class ShutdownDrain extends OncePerRequestFilter implements ApplicationListener<ContextClosedEvent> {

	private final Duration drain;

	private volatile boolean draining;

	private final List<Runnable> atTheStart = new CopyOnWriteArrayList<>();

	/** @param drain how long to keep answering once shutdown begins; zero turns the drain off */
	public ShutdownDrain(Duration drain) {
		if (drain.isNegative()) {
			throw new IllegalArgumentException("the shutdown drain must not be negative, got " + drain);
		}
		this.drain = drain;
	}

	@Override
	public void onApplicationEvent(ContextClosedEvent event) {
		if (this.drain.isZero() || this.draining) {
			return; // also the management server's context closing after ours
		}
		this.draining = true;
		this.atTheStart.forEach(Runnable::run);
		try {
			Thread.sleep(this.drain.toMillis());
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	/** Runs {@code action} when the drain begins, before it waits (never when there is no drain). */
	public void whenItBegins(Runnable action) {
		this.atTheStart.add(action);
	}

	/** How long it keeps answering once shutdown begins; zero when there is no drain. */
	public Duration duration() {
		return this.drain;
	}

	/** Whether shutdown has begun and answers end their connections. */
	public boolean draining() {
		return this.draining;
	}

	@Override
	protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
			throws ServletException, IOException {
		if (this.draining) {
			response.setHeader(HttpHeaders.CONNECTION, "close");
		}
		chain.doFilter(request, response);
	}

}
