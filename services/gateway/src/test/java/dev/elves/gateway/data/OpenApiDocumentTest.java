package dev.elves.gateway.data;

import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import dev.elves.gateway.TestTokens;
import dev.elves.gateway.activity.ActivityLog;
import dev.elves.gateway.registry.RegistryClient;
import dev.elves.gateway.security.SecurityConfiguration;
import org.junit.jupiter.api.Test;
import org.yaml.snakeyaml.Yaml;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.webmvc.test.autoconfigure.WebMvcTest;
import org.springframework.context.annotation.Import;
import org.springframework.test.context.bean.override.mockito.MockitoBean;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.web.servlet.mvc.method.annotation.RequestMappingHandlerMapping;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

/** The served OpenAPI document names exactly the gateway's routes, and needs no token. */
@WebMvcTest(properties = TestTokens.SECRET_PROPERTY)
@Import({ SecurityConfiguration.class, DataRequestValidator.class, ClockConfiguration.class })
class OpenApiDocumentTest {

	@Autowired
	private MockMvc mvc;

	@Autowired
	private RequestMappingHandlerMapping mappings;

	@MockitoBean
	private RegistryClient registry;

	@MockitoBean
	private ActivityLog activity;

	@Test
	@SuppressWarnings("unchecked")
	void theDocumentIsServedWithoutATokenAndListsEveryRouteAndNoOther() throws Exception {
		String text = this.mvc.perform(get("/openapi.yaml"))
			.andExpect(status().isOk())
			.andReturn()
			.getResponse()
			.getContentAsString();
		Map<String, Object> document = new Yaml().load(text);
		Set<String> documented = new TreeSet<>();
		((Map<String, Map<String, Object>>) document.get("paths")).forEach((path, operations) -> operations.keySet()
			.stream()
			.filter((key) -> !key.equals("parameters"))
			.forEach((method) -> documented.add(method.toUpperCase() + " " + path)));

		Set<String> routes = new TreeSet<>();
		this.mappings.getHandlerMethods().keySet().forEach((info) -> {
			Set<String> methods = new HashSet<>();
			info.getMethodsCondition().getMethods().forEach((method) -> methods.add(method.name()));
			info.getPatternValues()
				.stream()
				.filter((path) -> path.startsWith("/api/"))
				.forEach((path) -> methods.forEach((method) -> routes.add(method + " " + path)));
		});
		assertThat(routes).isNotEmpty();
		assertThat(documented).isEqualTo(routes);
	}

}
