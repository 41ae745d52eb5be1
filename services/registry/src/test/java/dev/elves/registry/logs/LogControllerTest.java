package dev.elves.registry.logs;

import dev.elves.registry.schema.SchemaMigrator;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

import dev.elves.contracts.ElvesHeaders;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.webmvc.test.autoconfigure.MockMvcBuilderCustomizer;
import org.springframework.context.annotation.Bean;
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

/** Bad input to the registry's log API is a 400 naming the field, before any database work. */
@WebMvcTest(controllers = LogController.class, properties = "elves.api.service-key=" + ServiceKeyTest.KEY)
@Import({ SimpleMeterRegistry.class, LogControllerTest.WithServiceKey.class })
class LogControllerTest {

	/** Every request of these tests carries the service key (ServiceKeyTest covers its absence). */
	@TestConfiguration
	static class WithServiceKey {

		@Bean
		MockMvcBuilderCustomizer serviceKey() {
			return (builder) -> builder.defaultRequest(get("/").header(ElvesHeaders.SERVICE_KEY, ServiceKeyTest.KEY));
		}

	}

	@Autowired
	private MockMvc mvc;

	@MockitoBean
	private LogStore store;

	@MockitoBean
	private LogQueries queries;

	@MockitoBean
	private SchemaMigrator schema;

	@Test
	void addAppLogNeedsAUser() throws Exception {
		this.mvc.perform(post("/api/v1/logs").contentType(MediaType.APPLICATION_JSON).content("{\"endpoint\":\"x\"}"))
			.andExpect(status().isBadRequest())
			.andExpect(jsonPath("$.field").value("userId"));
		this.mvc.perform(post("/api/v1/logs").contentType(MediaType.APPLICATION_JSON)
			.content("{\"userId\":\"" + "u".repeat(10_000) + "\"}"))
			.andExpect(status().isBadRequest())
			.andExpect(jsonPath("$.field").value("userId"));
		this.mvc.perform(post("/api/v1/logs").contentType(MediaType.APPLICATION_JSON).content("{\"userId\":[]}"))
			.andExpect(status().isBadRequest())
			.andExpect(jsonPath("$.field").value("body"));
		// PostgreSQL's text cannot hold NUL: the caller's mistake, not the database away.
		this.mvc
			.perform(post("/api/v1/logs").contentType(MediaType.APPLICATION_JSON).content("{\"userId\":\"a\\u0000b\"}"))
			.andExpect(status().isBadRequest())
			.andExpect(jsonPath("$.field").value("userId"))
			.andExpect(jsonPath("$.error").value("userId: must not contain the NUL character (\\u0000)"));
		verifyNoInteractions(this.store);
	}

	@Test
	void addAppLogWithAnAcceptItCannotAnswerIs406BeforeTheLogIsStored() throws Exception {
		this.mvc.perform(post("/api/v1/logs").header("Accept", "image/png")
			.contentType(MediaType.APPLICATION_JSON)
			.content("{\"userId\":\"alice\",\"endpoint\":\"addAppLog\"}"))
			.andExpect(status().isNotAcceptable())
			.andExpect(jsonPath("$.field").value("Accept"));
		verifyNoInteractions(this.store);
	}

	@Test
	void getAppLogChecksItsParameters() throws Exception {
		this.mvc.perform(get("/api/v1/logs")).andExpect(status().isBadRequest()).andExpect(jsonPath("$.field").value("user"));
		this.mvc.perform(get("/api/v1/logs").param("user", "a\u0000b"))
			.andExpect(status().isBadRequest())
			.andExpect(jsonPath("$.field").value("user"));
		this.mvc.perform(get("/api/v1/logs?user=a&limit=0"))
			.andExpect(status().isBadRequest())
			.andExpect(jsonPath("$.field").value("limit"));
		this.mvc.perform(get("/api/v1/logs?user=a&all=true&size=100000"))
			.andExpect(status().isBadRequest())
			.andExpect(jsonPath("$.field").value("size"));
		this.mvc.perform(get("/api/v1/logs?user=a&all=true&page=-1"))
			.andExpect(status().isBadRequest())
			.andExpect(jsonPath("$.field").value("page"));
		// A page past the first 10,000 rows would make PostgreSQL read and drop every row before it.
		this.mvc.perform(get("/api/v1/logs?user=a&all=true&page=2000000000&size=500"))
			.andExpect(status().isBadRequest())
			.andExpect(jsonPath("$.field").value("page"))
			.andExpect(jsonPath("$.error")
				.value("page: pages reach only the first 10000 rows; with size 500 the last page is 19"));
		verifyNoInteractions(this.queries);
	}

}
