package dev.elves.gateway.reads;

import java.net.URI;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;

import dev.elves.contracts.messaging.PublishFailedException;
import dev.elves.gateway.TestTokens;
import dev.elves.gateway.activity.ActivityLog;
import dev.elves.gateway.registry.RegistryBusyException;
import dev.elves.gateway.registry.RegistryClient;
import dev.elves.gateway.registry.RegistryTimeoutException;
import dev.elves.gateway.registry.RegistryUnavailableException;
import dev.elves.gateway.security.Caller;
import dev.elves.gateway.security.SecurityConfiguration;
import dev.elves.gateway.web.Call;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.webmvc.test.autoconfigure.WebMvcTest;
import org.springframework.context.annotation.Import;
import org.springframework.test.context.bean.override.mockito.MockitoBean;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.request.MockHttpServletRequestBuilder;

import static org.assertj.core.api.Assertions.assertThat;
import static org.hamcrest.Matchers.containsString;
import static org.mockito.ArgumentMatchers.any;
import static org.mockito.ArgumentMatchers.anyMap;
import static org.mockito.ArgumentMatchers.eq;
import static org.mockito.BDDMockito.given;
import static org.mockito.Mockito.never;
import static org.mockito.Mockito.times;
import static org.mockito.Mockito.verify;
import static org.mockito.Mockito.verifyNoInteractions;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.head;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.content;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.header;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.jsonPath;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

@WebMvcTest(controllers = { StatusController.class, HistoryController.class, UserController.class },
		properties = TestTokens.SECRET_PROPERTY)
@Import(SecurityConfiguration.class)
class ReadControllersTest {

	private static final Caller ALICE = new Caller("alice", false);

	@Autowired
	private MockMvc mvc;

	@MockitoBean
	private RegistryClient registry;

	@MockitoBean
	private ActivityLog activity;

	@Test
	void statusComesFromTheRegistryForTheCallerAndIsLoggedBeforeTheAnswer() throws Exception {
		UUID id = UUID.randomUUID();
		given(this.registry.json("/api/v1/requests/{id}", Map.of("id", id), Map.of("user", "alice"), "t1"))
			.willReturn(Optional.of("{\"id\":\"" + id + "\",\"status\":\"DONE\"}"));

		this.mvc.perform(get("/api/v1/status/" + id).header("Authorization", TestTokens.bearer("alice"))
			.header("X-Elves-Test-Id", "t1")).andExpect(status().isOk()).andExpect(jsonPath("$.status").value("DONE"));

		verify(this.activity).record(new Call(ALICE, "t1"), "getStatus", id);
	}

	@Test
	void aRunsTokenIsGoodForItsOwnTestIdOnly() throws Exception {
		UUID id = UUID.randomUUID();
		given(this.registry.json(eq("/api/v1/requests/{id}"), anyMap(), anyMap(), eq("shop/orders/0")))
			.willReturn(Optional.of("{\"id\":\"" + id + "\",\"status\":\"DONE\"}"));
		String runToken = "Bearer " + TestTokens.sign(TestTokens.SECRET,
				TestTokens.claims("alice", Instant.now().plusSeconds(600))
					.claim("admin", false)
					.claim("testId", "shop/orders/0")
					.build());

		this.mvc.perform(get("/api/v1/status/" + id).header("Authorization", runToken)
			.header("X-Elves-Test-Id", "shop/orders/0")).andExpect(status().isOk());
		// Left out, the header is the token's own test id: the call still counts for its test.
		this.mvc.perform(get("/api/v1/status/" + id).header("Authorization", runToken)).andExpect(status().isOk());
		verify(this.activity, times(2)).record(new Call(ALICE, "shop/orders/0"), "getStatus", id);

		this.mvc.perform(get("/api/v1/status/" + id).header("Authorization", runToken)
			.header("X-Elves-Test-Id", "shop/other/0"))
			.andExpect(status().isForbidden())
			.andExpect(jsonPath("$.field").value("X-Elves-Test-Id"))
			.andExpect(jsonPath("$.error").value(containsString("this token is for test shop/orders/0 only")));
		verify(this.registry, never()).json(any(), anyMap(), anyMap(), eq("shop/other/0"));
	}

	@Test
	void anUnknownRequestIs404AndNotLogged() throws Exception {
		given(this.registry.json(any(), anyMap(), anyMap(), any())).willReturn(Optional.empty());

		this.mvc.perform(get("/api/v1/status/" + UUID.randomUUID()).header("Authorization", TestTokens.bearer("alice")))
			.andExpect(status().isNotFound());

		verifyNoInteractions(this.activity);
	}

	@Test
	void aStatusIdThatIsNotAUuidIs400NamingIt() throws Exception {
		this.mvc.perform(get("/api/v1/status/not-a-uuid").header("Authorization", TestTokens.bearer("alice")))
			.andExpect(status().isBadRequest())
			.andExpect(jsonPath("$.field").value("id"));
	}

	@Test
	void theRegistryDownIs503AndSlowIs504InOurWordsNeverA500() throws Exception {
		given(this.registry.json(eq("/api/v1/logs"), anyMap(), anyMap(), any()))
			.willThrow(new RegistryUnavailableException("registry unreachable at http://127.0.0.1:1", null));
		this.mvc.perform(get("/api/v1/history").header("Authorization", TestTokens.bearer("alice")))
			.andExpect(status().isServiceUnavailable())
			.andExpect(header().exists("Retry-After"))
			.andExpect(jsonPath("$.error").value("registry unavailable, try again later"));

		given(this.registry.json(eq("/api/v1/users/{id}"), anyMap(), anyMap(), any()))
			.willThrow(new RegistryTimeoutException("registry did not answer in time", null));
		this.mvc.perform(get("/api/v1/users/me").header("Authorization", TestTokens.bearer("alice")))
			.andExpect(status().isGatewayTimeout());
		verifyNoInteractions(this.activity);
	}

	@Test
	void aFullRegistryBulkheadIsRefusedWith429AndRetryAfter() throws Exception {
		given(this.registry.json(eq("/api/v1/requests/{id}"), anyMap(), anyMap(), any()))
			.willThrow(new RegistryBusyException("too many calls to the registry at once"));
		this.mvc.perform(get("/api/v1/status/" + java.util.UUID.randomUUID()).header("Authorization",
				TestTokens.bearer("alice")))
			.andExpect(status().isTooManyRequests())
			.andExpect(header().string("Retry-After", "1"))
			.andExpect(jsonPath("$.error").value("too many calls to the registry at once"));
		verifyNoInteractions(this.activity);
	}

	@Test
	void theBrokerDownMakesAReadA503BecauseItsLogCannotBeConfirmed() throws Exception {
		given(this.registry.json(eq("/api/v1/logs"), anyMap(), anyMap(), any())).willReturn(Optional.of("{}"));
		org.mockito.BDDMockito.willThrow(new PublishFailedException("broker unreachable", null))
			.given(this.activity)
			.record(any(), any(), any());

		this.mvc.perform(get("/api/v1/history").header("Authorization", TestTokens.bearer("alice")))
			.andExpect(status().isServiceUnavailable());
	}

	@Test
	void historyAsksForTheLatest20AndAllHistoryForAPage() throws Exception {
		given(this.registry.json(eq("/api/v1/logs"), anyMap(), anyMap(), any())).willReturn(Optional.of("{\"items\":[]}"));

		this.mvc.perform(get("/api/v1/history").header("Authorization", TestTokens.bearer("alice")))
			.andExpect(status().isOk());
		this.mvc.perform(get("/api/v1/history?all=true&page=2&size=50").header("Authorization",
				TestTokens.bearer("alice")))
			.andExpect(status().isOk());

		verify(this.registry).json("/api/v1/logs", Map.of(), Map.of("user", "alice", "limit", 20), null);
		verify(this.registry).json("/api/v1/logs", Map.of(),
				Map.of("user", "alice", "all", true, "page", 2, "size", 50), null);
		verify(this.activity).record(new Call(ALICE, null), "getHistory", null);
		verify(this.activity).record(new Call(ALICE, null), "getAllHistory", null);
	}

	@Test
	void badPagingIs400NamingTheParameter() throws Exception {
		this.mvc.perform(get("/api/v1/history?all=true&size=0").header("Authorization", TestTokens.bearer("alice")))
			.andExpect(status().isBadRequest())
			.andExpect(jsonPath("$.field").value("size"));
		this.mvc.perform(get("/api/v1/history?all=true&page=abc").header("Authorization", TestTokens.bearer("alice")))
			.andExpect(status().isBadRequest())
			.andExpect(jsonPath("$.field").value("page"));
		this.mvc.perform(get("/api/v1/history?all=maybe").header("Authorization", TestTokens.bearer("alice")))
			.andExpect(status().isBadRequest())
			.andExpect(jsonPath("$.field").value("all"));
		this.mvc.perform(get("/api/v1/history?all=true&page=100").header("Authorization", TestTokens.bearer("alice")))
			.andExpect(status().isBadRequest())
			.andExpect(jsonPath("$.field").value("page"))
			.andExpect(jsonPath("$.error").value(containsString("the first 10000 rows")));
		verifyNoInteractions(this.registry);
	}

	@Test
	void allUsersIsForAdminsOnlyWhateverTheMethod() throws Exception {
		given(this.registry.json(eq("/api/v1/users"), anyMap(), anyMap(), any())).willReturn(Optional.of("{\"items\":[]}"));

		this.mvc.perform(get("/api/v1/users").header("Authorization", TestTokens.bearer("alice")))
			.andExpect(status().isForbidden())
			.andExpect(jsonPath("$.error").value(org.hamcrest.Matchers.containsString("admin")));
		this.mvc.perform(head("/api/v1/users").header("Authorization", TestTokens.bearer("alice")))
			.andExpect(status().isForbidden());
		this.mvc.perform(post("/api/v1/users").header("Authorization", TestTokens.bearer("alice")))
			.andExpect(status().isForbidden());
		this.mvc.perform(get("/api/v1/users").header("Authorization", TestTokens.adminBearer("root")))
			.andExpect(status().isOk());

		verify(this.activity).record(new Call(new Caller("root", true), null), "getAllUsers", null);
	}

	/** The admin rule is judged on the path as the router reads it: another spelling is no way round it. */
	@ParameterizedTest
	@ValueSource(strings = { "/%61pi/v1/users", "/api/v1/%75sers", "/%61%70%69/%76%31/%75%73%65%72%73", "/api;/v1/users",
			"/api/v1/users;x=y", "/api/v1//users", "/api/./v1/users", "/x/../api/v1/users", "/api%2Fv1/users" })
	void allUsersIsForAdminsOnlyWhateverTheSpelling(String path) throws Exception {
		int status = this.mvc.perform(get(URI.create(path)).header("Authorization", TestTokens.bearer("alice")))
			.andReturn()
			.getResponse()
			.getStatus();
		assertThat(status).as(path).isIn(400, 403, 404);
		verifyNoInteractions(this.registry, this.activity);
	}

	@Test
	void aNewUserThatTheRegistryHasNotSeenIsStillAnswered() throws Exception {
		given(this.registry.json(eq("/api/v1/users/{id}"), anyMap(), anyMap(), any())).willReturn(Optional.empty());

		this.mvc.perform(get("/api/v1/users/me").header("Authorization", TestTokens.bearer("newcomer")))
			.andExpect(status().isOk())
			.andExpect(jsonPath("$.id").value("newcomer"));
	}

	@Test
	void aPlotIsServedAsPngAndAdminsMayReadAnyones() throws Exception {
		UUID id = UUID.randomUUID();
		byte[] png = { (byte) 0x89, 'P', 'N', 'G' };
		given(this.registry.bytes("/api/v1/plots/{id}", Map.of("id", id), Map.of(), null)).willReturn(Optional.of(png));

		this.mvc.perform(get("/api/v1/plots/" + id).header("Authorization", TestTokens.adminBearer("root")))
			.andExpect(status().isOk())
			.andExpect(content().contentType("image/png"))
			.andExpect(content().bytes(png));
	}

	// Every error keeps its status whatever the request accepts. The plot endpoint produces a PNG, so a
	// client that asks for one (a browser's image request, the journeys' lost visitor) used to get a 500
	// for an unknown plot: the JSON error could not be written as a PNG.

	private static MockHttpServletRequestBuilder plot(String id, String accept) {
		MockHttpServletRequestBuilder request = get("/api/v1/plots/" + id).header("Authorization",
				TestTokens.bearer("alice"));
		return accept.isEmpty() ? request : request.header("Accept", accept);
	}

	/** What clients send: an image request, an API client, curl, a page load, a weighted list, none. */
	@ParameterizedTest
	@ValueSource(strings = { "image/png", "application/json", "*/*", "text/html",
			"image/png;q=1.0, application/json;q=0.5", "image/*", "" })
	void anUnknownPlotIs404InJsonWhateverTheAccept(String accept) throws Exception {
		given(this.registry.bytes(any(), anyMap(), anyMap(), any())).willReturn(Optional.empty());

		this.mvc.perform(plot(UUID.randomUUID().toString(), accept))
			.andExpect(status().isNotFound())
			.andExpect(content().contentType("application/json"))
			.andExpect(jsonPath("$.error").value(org.hamcrest.Matchers.startsWith("no plot for request")));
		verifyNoInteractions(this.activity);
	}

	@ParameterizedTest
	@ValueSource(strings = { "image/png", "application/json", "*/*" })
	void headOfAnUnknownPlotIs404(String accept) throws Exception {
		given(this.registry.bytes(any(), anyMap(), anyMap(), any())).willReturn(Optional.empty());

		this.mvc.perform(head("/api/v1/plots/" + UUID.randomUUID()).header("Authorization", TestTokens.bearer("alice"))
			.header("Accept", accept)).andExpect(status().isNotFound());
	}

	@ParameterizedTest
	@ValueSource(strings = { "image/png", "application/json", "*/*", "text/html" })
	void aPlotIdThatIsNotAUuidIs400NamingItWhateverTheAccept(String accept) throws Exception {
		this.mvc.perform(plot("not-a-uuid", accept))
			.andExpect(status().isBadRequest())
			.andExpect(content().contentType("application/json"))
			.andExpect(jsonPath("$.field").value("id"));
	}

	@ParameterizedTest
	@ValueSource(strings = { "image/png", "*/*", "text/html" })
	void theRegistryDownSlowOrBusyKeepsItsStatusWhateverTheAccept(String accept) throws Exception {
		String id = UUID.randomUUID().toString();
		given(this.registry.bytes(any(), anyMap(), anyMap(), any()))
			.willThrow(new RegistryUnavailableException("registry unreachable", null));
		this.mvc.perform(plot(id, accept))
			.andExpect(status().isServiceUnavailable())
			.andExpect(header().exists("Retry-After"))
			.andExpect(jsonPath("$.error").value("registry unavailable, try again later"));

		// Restubbed with willThrow(..).given(..): given(mock.call()) would call the throwing stub.
		org.mockito.BDDMockito.willThrow(new RegistryTimeoutException("registry did not answer in time", null))
			.given(this.registry)
			.bytes(any(), anyMap(), anyMap(), any());
		this.mvc.perform(plot(id, accept))
			.andExpect(status().isGatewayTimeout())
			.andExpect(content().contentType("application/json"));

		org.mockito.BDDMockito.willThrow(new RegistryBusyException("too many calls to the registry at once"))
			.given(this.registry)
			.bytes(any(), anyMap(), anyMap(), any());
		this.mvc.perform(plot(id, accept))
			.andExpect(status().isTooManyRequests())
			.andExpect(header().exists("Retry-After"))
			.andExpect(content().contentType("application/json"));
	}

	@ParameterizedTest
	@ValueSource(strings = { "application/json", "*/*", "" })
	void anUnknownStatusIs404(String accept) throws Exception {
		given(this.registry.json(any(), anyMap(), anyMap(), any())).willReturn(Optional.empty());

		this.mvc.perform(statusRead(accept))
			.andExpect(status().isNotFound())
			.andExpect(content().contentType("application/json"))
			.andExpect(jsonPath("$.error").value(org.hamcrest.Matchers.endsWith("is not known (yet)")));
	}

	@Test
	void aStatusAskedAsAPngIs406NamingTheAcceptNeverA500() throws Exception {
		// The status is JSON only: told so, in JSON, before any lookup.
		this.mvc.perform(statusRead("image/png"))
			.andExpect(status().isNotAcceptable())
			.andExpect(content().contentType("application/json"))
			.andExpect(jsonPath("$.field").value("Accept"))
			.andExpect(jsonPath("$.error").value("Accept: this endpoint answers application/json"));
		verifyNoInteractions(this.registry, this.activity);
	}

	private static MockHttpServletRequestBuilder statusRead(String accept) {
		MockHttpServletRequestBuilder request = get("/api/v1/status/" + UUID.randomUUID()).header("Authorization",
				TestTokens.bearer("alice"));
		return accept.isEmpty() ? request : request.header("Accept", accept);
	}

}
