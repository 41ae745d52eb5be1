package dev.elves.gateway.web;

import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The token bucket on a clock the test moves. */
class UserRateLimitTest {

	private static final long SECOND = 1_000_000_000L;

	private final AtomicLong now = new AtomicLong(42 * SECOND);

	@Test
	void aBurstPassesThenCallsWaitForTheRateAndEachUserHasABucket() {
		UserRateLimit limit = new UserRateLimit(2, 3, this.now::get);
		for (int i = 0; i < 3; i++) {
			limit.take("alice");
		}
		assertThatThrownBy(() -> limit.take("alice")).isInstanceOf(UserRateLimit.RateLimitedException.class)
			.extracting((ex) -> ((UserRateLimit.RateLimitedException) ex).retryAfterSeconds())
			.isEqualTo(1L);
		assertThatCode(() -> limit.take("bob")).as("another user is not limited").doesNotThrowAnyException();

		this.now.addAndGet(SECOND / 2);
		assertThatCode(() -> limit.take("alice")).as("half a second at 2/s refills one").doesNotThrowAnyException();
		assertThatThrownBy(() -> limit.take("alice")).isInstanceOf(UserRateLimit.RateLimitedException.class);
	}

	@Test
	void aSlowRateSaysHowManySecondsToWait() {
		UserRateLimit limit = new UserRateLimit(0.1, 1, this.now::get);
		limit.take("alice");
		assertThatThrownBy(() -> limit.take("alice"))
			.extracting((ex) -> ((UserRateLimit.RateLimitedException) ex).retryAfterSeconds())
			.isEqualTo(10L);
	}

}
