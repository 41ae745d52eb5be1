package dev.elves.web;

import java.time.Duration;

import org.junit.jupiter.api.Test;

import org.springframework.context.event.ContextClosedEvent;
import org.springframework.context.support.GenericApplicationContext;
import org.springframework.mock.web.MockFilterChain;
import org.springframework.mock.web.MockHttpServletRequest;
import org.springframework.mock.web.MockHttpServletResponse;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

class ShutdownDrainTest {

	private static String connectionHeaderOfAnAnswer(ShutdownDrain drain) throws Exception {
		MockHttpServletResponse response = new MockHttpServletResponse();
		MockFilterChain chain = new MockFilterChain();
		drain.doFilter(new MockHttpServletRequest("GET", "/api/v1/users/me"), response, chain);
		assertThat(chain.getRequest()).as("the request goes on to the application").isNotNull();
		return response.getHeader("Connection");
	}

	@Test
	void answersKeepTheirConnectionUntilShutdownBeginsThenEndIt() throws Exception {
		ShutdownDrain drain = new ShutdownDrain(Duration.ofMillis(1));
		assertThat(connectionHeaderOfAnAnswer(drain)).isNull();
		drain.onApplicationEvent(new ContextClosedEvent(new GenericApplicationContext()));
		assertThat(drain.draining()).isTrue();
		assertThat(connectionHeaderOfAnAnswer(drain)).isEqualTo("close");
	}

	@Test
	void aZeroDrainChangesNothing() throws Exception {
		ShutdownDrain drain = new ShutdownDrain(Duration.ZERO);
		drain.onApplicationEvent(new ContextClosedEvent(new GenericApplicationContext()));
		assertThat(drain.draining()).isFalse();
		assertThat(connectionHeaderOfAnAnswer(drain)).isNull();
	}

	@Test
	void aNegativeDrainIsRefusedSayingSo() {
		assertThatIllegalArgumentException().isThrownBy(() -> new ShutdownDrain(Duration.ofSeconds(-1)))
			.withMessageContaining("shutdown drain must not be negative");
	}

}
