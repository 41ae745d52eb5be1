package dev.elves.gateway.web;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

import dev.elves.gateway.security.Caller;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import org.springframework.security.core.Authentication;
import org.springframework.web.servlet.HandlerInterceptor;

/**
 * A token bucket per user (the token's {@code sub}): {@code userRate} calls a second on
 * average, {@code burst} at once. A call over the limit never reaches a controller: 429 with the
 * seconds until the next call would pass in Retry-After.
 */
class UserRateLimit implements HandlerInterceptor {

	/** Forget buckets past this many users (they refill in a second anyway): memory stays bounded. */
	static final int MAX_USERS = 100_000;

	private static final long NANOS_PER_SECOND = Duration.ofSeconds(1).toNanos();

	private final double ratePerNano;

	private final double burst;

	private final LongSupplier nanoTime;

	private final Map<String, Bucket> buckets = new ConcurrentHashMap<>();

	UserRateLimit(double perSecond, int burst, LongSupplier nanoTime) {
		this.ratePerNano = perSecond / NANOS_PER_SECOND;
		this.burst = burst;
		this.nanoTime = nanoTime;
	}

	@Override
	public boolean preHandle(HttpServletRequest request, HttpServletResponse response, Object handler) {
		if (request.getUserPrincipal() instanceof Authentication authentication) {
			take(Caller.of(authentication).userId());
		}
		return true;
	}

	void take(String user) {
		if (this.buckets.size() > MAX_USERS) {
			this.buckets.clear();
		}
		long waitNanos = this.buckets.computeIfAbsent(user, (u) -> new Bucket(this.burst, this.nanoTime.getAsLong()))
			.take(this.nanoTime.getAsLong());
		if (waitNanos > 0) {
			long seconds = Math.max(1, (waitNanos + NANOS_PER_SECOND - 1) / NANOS_PER_SECOND);
			throw new RateLimitedException(seconds);
		}
	}

	private final class Bucket {

		private double tokens;

		private long updated;

		Bucket(double tokens, long now) {
			this.tokens = tokens;
			this.updated = now;
		}

		/** Takes a token: 0, or how long until one is there. */
		synchronized long take(long now) {
			this.tokens = Math.min(UserRateLimit.this.burst,
					this.tokens + (now - this.updated) * UserRateLimit.this.ratePerNano);
			this.updated = now;
			if (this.tokens >= 1) {
				this.tokens -= 1;
				return 0;
			}
			return (long) Math.ceil((1 - this.tokens) / UserRateLimit.this.ratePerNano);
		}

	}

	/** Over the limit: 429, Retry-After {@link #retryAfterSeconds()}. */
	static class RateLimitedException extends RuntimeException {

		private final long retryAfterSeconds;

		RateLimitedException(long retryAfterSeconds) {
			super("too many calls for this user: try again in " + retryAfterSeconds + " s");
			this.retryAfterSeconds = retryAfterSeconds;
		}

		long retryAfterSeconds() {
			return this.retryAfterSeconds;
		}

	}

}
