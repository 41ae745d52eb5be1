package dev.elves.gateway.reads;

import java.util.Optional;

import dev.elves.gateway.TestTokens;
import dev.elves.gateway.activity.ActivityLog;
import dev.elves.gateway.registry.RegistryClient;
import dev.elves.gateway.security.SecurityConfiguration;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.webmvc.test.autoconfigure.WebMvcTest;
import org.springframework.context.annotation.Import;
import org.springframework.test.context.bean.override.mockito.MockitoBean;
import org.springframework.test.web.servlet.MockMvc;

import static org.mockito.ArgumentMatchers.any;
import static org.mockito.ArgumentMatchers.anyMap;
import static org.mockito.BDDMockito.given;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.header;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.jsonPath;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

/** With ELVES_GATEWAY_USER_RATE set, a user past the limit gets 429 with Retry-After. */
@WebMvcTest(controllers = UserController.class, properties = { TestTokens.SECRET_PROPERTY, "elves.gateway.user-rate=0.01", "elves.gateway.user-burst=2" })
@Import(SecurityConfiguration.class)
class UserRateLimitWebTest {

	@Autowired
	private MockMvc mvc;

	@MockitoBean
	private RegistryClient registry;

	@MockitoBean
	private ActivityLog activity;

	@Test
	void theThirdCallOfABurstOfTwoIs429() throws Exception {
		given(this.registry.json(any(), anyMap(), anyMap(), any())).willReturn(Optional.of("{}"));
		for (int i = 0; i < 2; i++) {
			this.mvc.perform(get("/api/v1/users/me").header("Authorization", TestTokens.bearer("alice")))
				.andExpect(status().isOk());
		}
		this.mvc.perform(get("/api/v1/users/me").header("Authorization", TestTokens.bearer("alice")))
			.andExpect(status().isTooManyRequests())
			.andExpect(header().string("Retry-After", "100"))
			.andExpect(jsonPath("$.error").value(org.hamcrest.Matchers.startsWith("too many calls")));
		this.mvc.perform(get("/api/v1/users/me").header("Authorization", TestTokens.bearer("bob")))
			.andExpect(status().isOk());
	}

}
