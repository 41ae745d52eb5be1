package dev.elves.registry.logs;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Base64;
import java.util.Map;
import java.util.UUID;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

import dev.elves.registry.schema.SchemaMigrator;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.webmvc.test.autoconfigure.WebMvcTest;
import org.springframework.context.annotation.Import;
import org.springframework.http.MediaType;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.bean.override.mockito.MockitoBean;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.request.MockHttpServletRequestBuilder;

import tools.jackson.databind.json.JsonMapper;

import static org.hamcrest.Matchers.containsString;
import static org.mockito.ArgumentMatchers.any;
import static org.mockito.ArgumentMatchers.anyString;
import static org.mockito.ArgumentMatchers.eq;
import static org.mockito.Mockito.verify;
import static org.mockito.Mockito.verifyNoInteractions;
import static org.mockito.Mockito.when;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.jsonPath;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

/**
 * A k6 runner's run credential: valid for its own test id, its scopes and until it expires; the
 * service key still opens everything.
 */
@WebMvcTest(properties = "elves.api.service-key=" + RunCredentialTest.KEY)
@Import(SimpleMeterRegistry.class)
class RunCredentialTest {

	static final String KEY = "registry-key-for-the-tests";

	static final String TEST = "loadtests/registry-mix/0";

	static final String ALL = "logs:write logs:read users:read ledger:read";

	static final String LOG = "{\"userId\":\"loadtest-user-0000\",\"endpoint\":\"addAppLog\"}";

	@Autowired
	private MockMvc mvc;

	@MockitoBean
	private LogStore store;

	@MockitoBean
	private LogQueries queries;

	@MockitoBean
	private JdbcTemplate jdbc;

	@MockitoBean
	private SchemaMigrator schema;

	/** A credential as the harness signs it (elves.engine.planning.credentials), with the key derived from {@code key}. */
	static String credential(String key, Map<String, Object> claims) throws Exception {
		Base64.Encoder base64 = Base64.getUrlEncoder().withoutPadding();
		JsonMapper mapper = JsonMapper.builder().build();
		String signed = base64.encodeToString(mapper.writeValueAsBytes(Map.of("alg", "HS256", "typ", "JWT"))) + "."
				+ base64.encodeToString(mapper.writeValueAsBytes(claims));
		Mac mac = Mac.getInstance("HmacSHA256");
		// The signing key is derived from the service key: HMAC-SHA256 of the label under the key.
		mac.init(new SecretKeySpec(key.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
		byte[] runKey = mac.doFinal("elves run credential".getBytes(StandardCharsets.UTF_8));
		mac.init(new SecretKeySpec(runKey, "HmacSHA256"));
		return signed + "." + base64.encodeToString(mac.doFinal(signed.getBytes(StandardCharsets.US_ASCII)));
	}

	static String credential(String testId, String scope, long expiresInSeconds) throws Exception {
		long now = Instant.now().getEpochSecond();
		return credential(KEY, Map.of("iss", "elves", "aud", "elves-registry", "sub", testId, "scope", scope, "iat",
				now, "exp", now + expiresInSeconds));
	}

	private static MockHttpServletRequestBuilder addAppLog(String credential, String testId) {
		MockHttpServletRequestBuilder request = post("/api/v1/logs").contentType(MediaType.APPLICATION_JSON)
			.content(LOG)
			.header("X-Elves-Run-Credential", credential);
		return (testId != null) ? request.header("X-Elves-Test-Id", testId) : request;
	}

	@Test
	void aRunnerPostsLogsUnderItsOwnTestId() throws Exception {
		when(this.store.save(any(), anyString())).thenReturn(new LogStore.Saved(1, 0));
		this.mvc.perform(addAppLog(credential(TEST, ALL, 600), TEST)).andExpect(status().isCreated());
		verify(this.store).save(any(), eq("http"));
	}

	@Test
	void aForgedLogForAnotherTestIdIsRefusedNamingTheHeader() throws Exception {
		this.mvc.perform(addAppLog(credential(TEST, ALL, 600), "loadtests/other/0"))
			.andExpect(status().isForbidden())
			.andExpect(jsonPath("$.field").value("X-Elves-Test-Id"))
			.andExpect(jsonPath("$.error").value(containsString("loadtests/other/0")));
		this.mvc.perform(addAppLog(credential(TEST, ALL, 600), null))
			.andExpect(status().isForbidden())
			.andExpect(jsonPath("$.field").value("X-Elves-Test-Id"));
		verifyNoInteractions(this.store);
	}

	@Test
	void anExpiredCredentialIs401() throws Exception {
		this.mvc.perform(addAppLog(credential(TEST, ALL, -1), TEST))
			.andExpect(status().isUnauthorized())
			.andExpect(jsonPath("$.field").value("X-Elves-Run-Credential"))
			.andExpect(jsonPath("$.error").value(containsString("expired")));
		verifyNoInteractions(this.store);
	}

	@Test
	void aCredentialSignedWithAnotherKeyOrWithTheServiceKeyItselfIs401() throws Exception {
		long now = Instant.now().getEpochSecond();
		Map<String, Object> claims = Map.of("iss", "elves", "aud", "elves-registry", "sub", TEST, "scope", ALL, "exp",
				now + 600);
		this.mvc.perform(addAppLog(credential("another-key-of-16-chars", claims), TEST))
			.andExpect(status().isUnauthorized());
		this.mvc.perform(addAppLog(credential(KEY, claims).replaceFirst("^[^.]+",
				Base64.getUrlEncoder().withoutPadding().encodeToString("{\"alg\":\"none\"}".getBytes())), TEST))
			.andExpect(status().isUnauthorized());
		verifyNoInteractions(this.store);
	}

	@Test
	void theLedgerOfItsOwnTestOnly() throws Exception {
		String credential = credential(TEST, ALL, 600);
		this.mvc.perform(get("/api/v1/ledger").param("testId", TEST).header("X-Elves-Run-Credential", credential))
			.andExpect(status().isOk())
			.andExpect(jsonPath("$.testId").value(TEST));
		this.mvc.perform(get("/api/v1/ledger").param("testId", "loadtests/other/0")
			.header("X-Elves-Run-Credential", credential))
			.andExpect(status().isForbidden())
			.andExpect(jsonPath("$.field").value("testId"));
	}

	@Test
	void onlyTheScopesItGrantsAndNothingElse() throws Exception {
		String logsOnly = credential(TEST, "logs:write", 600);
		this.mvc.perform(get("/api/v1/users").header("X-Elves-Run-Credential", logsOnly))
			.andExpect(status().isForbidden())
			.andExpect(jsonPath("$.error").value(containsString("users:read")));
		// No scope opens the requests and plots: they are the gateway's, not a runner's.
		String all = credential(TEST, ALL, 600);
		this.mvc.perform(get("/api/v1/requests/" + UUID.randomUUID()).header("X-Elves-Run-Credential", all))
			.andExpect(status().isForbidden());
		this.mvc.perform(get("/api/v1/users").header("X-Elves-Run-Credential", all)).andExpect(status().isOk());
		verifyNoInteractions(this.store);
	}

	@Test
	void theServiceKeyStillOpensEverything() throws Exception {
		when(this.store.save(any(), anyString())).thenReturn(new LogStore.Saved(1, 0));
		this.mvc.perform(post("/api/v1/logs").contentType(MediaType.APPLICATION_JSON)
			.content(LOG)
			.header("X-Elves-Service-Key", KEY)
			.header("X-Elves-Test-Id", "loadtests/any/3")).andExpect(status().isCreated());
		this.mvc.perform(get("/api/v1/ledger").param("testId", "loadtests/any/3").header("X-Elves-Service-Key", KEY))
			.andExpect(status().isOk());
	}

}
