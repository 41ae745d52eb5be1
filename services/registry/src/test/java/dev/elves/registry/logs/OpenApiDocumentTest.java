package dev.elves.registry.logs;

import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import dev.elves.registry.schema.SchemaMigrator;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.yaml.snakeyaml.Yaml;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.webmvc.test.autoconfigure.WebMvcTest;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.bean.override.mockito.MockitoBean;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.web.servlet.mvc.method.annotation.RequestMappingHandlerMapping;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.jsonPath;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

/** The registry's OpenAPI document names exactly its routes, and is as internal as they are. */
@WebMvcTest(properties = "elves.api.service-key=" + ServiceKeyTest.KEY)
@Import(SimpleMeterRegistry.class)
class OpenApiDocumentTest {

	@Autowired
	private MockMvc mvc;

	@Autowired
	private RequestMappingHandlerMapping mappings;

	@MockitoBean
	private JdbcTemplate jdbc;

	@MockitoBean
	private LogStore store;

	@MockitoBean
	private LogQueries queries;

	@MockitoBean
	private SchemaMigrator schema;

	@Test
	void withoutTheKeyTheDocumentIs401() throws Exception {
		this.mvc.perform(get("/openapi.yaml"))
			.andExpect(status().isUnauthorized())
			.andExpect(jsonPath("$.field").value("X-Elves-Service-Key"));
	}

	@Test
	@SuppressWarnings("unchecked")
	void withTheKeyTheDocumentListsEveryRouteAndNoOther() throws Exception {
		String text = this.mvc.perform(get("/openapi.yaml").header("X-Elves-Service-Key", ServiceKeyTest.KEY))
			.andExpect(status().isOk())
			.andReturn()
			.getResponse()
			.getContentAsString();
		Map<String, Object> document = new Yaml().load(text);
		Set<String> documented = new TreeSet<>();
		((Map<String, Map<String, Object>>) document.get("paths")).forEach((path, operations) -> operations.keySet()
			.forEach((method) -> documented.add(method.toUpperCase() + " " + path)));

		Set<String> routes = new TreeSet<>();
		this.mappings.getHandlerMethods().keySet().forEach((info) -> {
			Set<String> methods = new HashSet<>();
			info.getMethodsCondition().getMethods().forEach((method) -> methods.add(method.name()));
			info.getPatternValues().forEach((path) -> methods.forEach((method) -> routes.add(method + " " + path)));
		});
		assertThat(routes).hasSize(7);
		assertThat(documented).isEqualTo(routes);
	}

}
