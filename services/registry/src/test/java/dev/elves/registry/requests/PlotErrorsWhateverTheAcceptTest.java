package dev.elves.registry.requests;

import java.util.List;
import java.util.UUID;

import dev.elves.registry.schema.SchemaMigrator;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.webmvc.test.autoconfigure.WebMvcTest;
import org.springframework.context.annotation.Import;
import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.RowMapper;
import org.springframework.test.context.bean.override.mockito.MockitoBean;
import org.springframework.test.web.servlet.MockMvc;

import static org.mockito.ArgumentMatchers.any;
import static org.mockito.ArgumentMatchers.anyString;
import static org.mockito.BDDMockito.given;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.head;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.content;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.jsonPath;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

/**
 * The registry's plot errors keep their status whatever the caller accepts: the gateway's plot
 * reads go through it, and a PNG asked for must not turn a 404 or a 503 into a 500.
 */
@WebMvcTest(controllers = RequestController.class, properties = "elves.api.service-key=" + PlotErrorsWhateverTheAcceptTest.KEY)
@Import(SimpleMeterRegistry.class)
class PlotErrorsWhateverTheAcceptTest {

	static final String KEY = "registry-key-for-the-tests";

	@Autowired
	private MockMvc mvc;

	@MockitoBean
	private JdbcTemplate jdbc;

	@MockitoBean
	private SchemaMigrator schema;

	@ParameterizedTest
	@ValueSource(strings = { "image/png", "application/json", "*/*", "text/html", "image/*" })
	void anUnknownPlotIs404InJson(String accept) throws Exception {
		given(this.jdbc.query(anyString(), any(RowMapper.class), any(Object[].class))).willReturn(List.of());

		this.mvc.perform(get("/api/v1/plots/" + UUID.randomUUID()).header("X-Elves-Service-Key", KEY)
			.header("Accept", accept))
			.andExpect(status().isNotFound())
			.andExpect(content().contentType("application/json"))
			.andExpect(jsonPath("$.field").value("id"));
		this.mvc.perform(head("/api/v1/plots/" + UUID.randomUUID()).header("X-Elves-Service-Key", KEY)
			.header("Accept", accept)).andExpect(status().isNotFound());
	}

	@ParameterizedTest
	@ValueSource(strings = { "image/png", "*/*" })
	void theDatabaseAwayIs503WhenAPngIsAsked(String accept) throws Exception {
		given(this.jdbc.query(anyString(), any(RowMapper.class), any(Object[].class)))
			.willThrow(new DataAccessResourceFailureException("connection refused"));

		this.mvc.perform(get("/api/v1/plots/" + UUID.randomUUID()).header("X-Elves-Service-Key", KEY)
			.header("Accept", accept))
			.andExpect(status().isServiceUnavailable())
			.andExpect(content().contentType("application/json"))
			.andExpect(jsonPath("$.error").value("database unavailable, try again later"));
	}

	@ParameterizedTest
	@ValueSource(strings = { "image/png", "application/json" })
	void aPlotIdThatIsNotAUuidIs400NamingIt(String accept) throws Exception {
		this.mvc.perform(get("/api/v1/plots/nope").header("X-Elves-Service-Key", KEY).header("Accept", accept))
			.andExpect(status().isBadRequest())
			.andExpect(jsonPath("$.field").value("id"));
	}

}
