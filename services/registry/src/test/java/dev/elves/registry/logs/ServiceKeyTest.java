package dev.elves.registry.logs;

import java.net.URI;

import dev.elves.registry.schema.SchemaMigrator;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.webmvc.test.autoconfigure.WebMvcTest;
import org.springframework.context.annotation.Import;
import org.springframework.http.MediaType;
import org.springframework.test.context.bean.override.mockito.MockitoBean;
import org.springframework.test.web.servlet.MockMvc;

import static org.mockito.Mockito.verifyNoInteractions;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.jsonPath;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

/** With ELVES_SERVICE_KEY set, the API answers only callers that send it; bodies are bounded. */
@WebMvcTest(controllers = LogController.class, properties = "elves.api.service-key=" + ServiceKeyTest.KEY)
@Import(SimpleMeterRegistry.class)
class ServiceKeyTest {

	static final String KEY = "registry-key-for-the-tests";

	@Autowired
	private MockMvc mvc;

	@MockitoBean
	private LogStore store;

	@MockitoBean
	private LogQueries queries;

	@MockitoBean
	private SchemaMigrator schema;

	@Test
	void withoutTheKeyOrWithAnotherTheAnswerIs401NamingTheHeader() throws Exception {
		this.mvc.perform(get("/api/v1/users"))
			.andExpect(status().isUnauthorized())
			.andExpect(jsonPath("$.field").value("X-Elves-Service-Key"));
		this.mvc.perform(get("/api/v1/logs?user=a").header("X-Elves-Service-Key", KEY + "x"))
			.andExpect(status().isUnauthorized());
	}

	@Test
	void withTheKeyTheCallReachesTheApi() throws Exception {
		this.mvc.perform(get("/api/v1/logs").header("X-Elves-Service-Key", KEY))
			.andExpect(status().isBadRequest())
			.andExpect(jsonPath("$.field").value("user"));
	}

	/** Spellings the router matches as {@code /api/v1/logs} (decoded, {@code ;} parameters removed). */
	@ParameterizedTest
	@ValueSource(strings = { "/%61pi/v1/logs", "/api;/v1/logs", "/api/v1;x=y/logs", "/%61%70%69/v1/%6cogs" })
	void howeverThePathIsSpeltTheKeyIsNeeded(String path) throws Exception {
		this.mvc.perform(get(URI.create(path + "?user=alice")))
			.andExpect(status().isUnauthorized())
			.andExpect(jsonPath("$.field").value("X-Elves-Service-Key"));
		this.mvc.perform(post(URI.create(path)).contentType(MediaType.APPLICATION_JSON).content("{\"userId\":\"mallory\"}"))
			.andExpect(status().isUnauthorized());
		verifyNoInteractions(this.store, this.queries);
		// The same spelling with the key is the API: the router did take it for /api/v1/logs.
		this.mvc.perform(get(URI.create(path)).header("X-Elves-Service-Key", KEY))
			.andExpect(status().isBadRequest())
			.andExpect(jsonPath("$.field").value("user"));
	}

	@Test
	void aBodyOverTheLimitIs413() throws Exception {
		this.mvc.perform(post("/api/v1/logs").header("X-Elves-Service-Key", KEY)
			.contentType(MediaType.APPLICATION_JSON)
			.content("{\"userId\":\"" + "u".repeat(100_000) + "\"}"))
			.andExpect(status().isContentTooLarge())
			.andExpect(jsonPath("$.field").value("body"));
	}

}
