package dev.elves.gateway.data;

import java.time.Clock;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalTime;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import java.util.stream.Stream;

import dev.elves.contracts.DataRequest;
import dev.elves.contracts.messaging.PublishFailedException;
import dev.elves.contracts.messaging.PublishRejectedException;
import dev.elves.gateway.TestTokens;
import dev.elves.gateway.activity.ActivityLog;
import dev.elves.gateway.security.Caller;
import dev.elves.gateway.security.SecurityConfiguration;
import dev.elves.gateway.web.Call;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.webmvc.test.autoconfigure.WebMvcTest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.http.MediaType;
import org.springframework.test.context.bean.override.mockito.MockitoBean;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.MvcResult;

import static org.assertj.core.api.Assertions.assertThat;
import static org.mockito.ArgumentMatchers.any;
import static org.mockito.BDDMockito.given;
import static org.mockito.Mockito.verify;
import static org.mockito.Mockito.verifyNoInteractions;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.header;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.jsonPath;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

@WebMvcTest(controllers = DataController.class, properties = TestTokens.SECRET_PROPERTY)
@Import({ SecurityConfiguration.class, DataRequestValidator.class, DataControllerTest.FixedClock.class })
class DataControllerTest {

	private static final String VALID = "{\"radar\":\"KTLX\",\"date\":\"2024-05-20\",\"start\":\"10:00\",\"end\":\"11:30\"}";

	/** Long, but under the 16 KB body limit: the validator, not the limit, must refuse it. */
	private static final String LONG = "x".repeat(10_000);

	private static final String MEGABYTE = "x".repeat(1024 * 1024);

	@Autowired
	private MockMvc mvc;

	@MockitoBean
	private ActivityLog activity;

	@Test
	void aValidRequestIsQueuedAndAnsweredWith202AndItsId() throws Exception {
		UUID id = UUID.randomUUID();
		given(this.activity.requestData(any(), any())).willReturn(id);

		this.mvc.perform(post("/api/v1/data").header("Authorization", TestTokens.bearer("alice"))
			.header("X-Elves-Test-Id", "local/case-1a/0")
			.contentType(MediaType.APPLICATION_JSON)
			.content(VALID)).andExpect(status().isAccepted()).andExpect(jsonPath("$.id").value(id.toString()));

		verify(this.activity).requestData(new Call(new Caller("alice", false), "local/case-1a/0"),
				new DataRequest("KTLX", LocalDate.of(2024, 5, 20), LocalTime.of(10, 0), LocalTime.of(11, 30)));
	}

	@Test
	void withoutATokenTheAnswerIs401AndNothingIsQueued() throws Exception {
		this.mvc.perform(post("/api/v1/data").contentType(MediaType.APPLICATION_JSON).content(VALID))
			.andExpect(status().isUnauthorized())
			.andExpect(jsonPath("$.field").value("Authorization"))
			.andExpect(jsonPath("$.error").value(org.hamcrest.Matchers.startsWith("missing bearer token")));
		verifyNoInteractions(this.activity);
	}

	static Stream<Arguments> badTokens() {
		Instant later = Instant.now().plusSeconds(600);
		return Stream.of(Arguments.of("garbage", "Bearer not.a.jwt"),
				Arguments.of("signed with another secret",
						"Bearer " + TestTokens.sign("another-secret-another-secret-another", "alice", false, later)),
				Arguments.of("expired", "Bearer " + TestTokens.sign(TestTokens.SECRET, "alice", false,
						Instant.now().minusSeconds(3600))),
				Arguments.of("no subject", "Bearer " + TestTokens.sign(TestTokens.SECRET, null, false, later)),
				Arguments.of("no expiry", "Bearer " + TestTokens.sign(TestTokens.SECRET,
						TestTokens.claims("alice", null).build())),
				Arguments.of("another issuer", "Bearer " + TestTokens.sign(TestTokens.SECRET,
						TestTokens.claims("alice", later).issuer("someone-else").build())),
				Arguments.of("another audience", "Bearer " + TestTokens.sign(TestTokens.SECRET,
						TestTokens.claims("alice", later).audience("another-service").build())),
				Arguments.of("no issuer", "Bearer " + TestTokens.sign(TestTokens.SECRET,
						TestTokens.claims("alice", later).issuer(null).build())),
				Arguments.of("no audience", "Bearer " + TestTokens.sign(TestTokens.SECRET,
						TestTokens.claims("alice", later).audience((String) null).build())),
				Arguments.of("a subject with a slash", "Bearer " + TestTokens.sign(TestTokens.SECRET, "../admin", false,
						later)),
				Arguments.of("a subject of 65 characters", "Bearer " + TestTokens.sign(TestTokens.SECRET,
						"a".repeat(65), false, later)),
				Arguments.of("not a bearer", "Basic YWxpY2U6c2VjcmV0"));
	}

	@ParameterizedTest(name = "{0}")
	@MethodSource("badTokens")
	void aBadTokenIs401(String what, String authorization) throws Exception {
		this.mvc.perform(post("/api/v1/data").header("Authorization", authorization)
			.contentType(MediaType.APPLICATION_JSON)
			.content(VALID)).andExpect(status().isUnauthorized());
		verifyNoInteractions(this.activity);
	}

	static Stream<Arguments> badBodies() {
		return Stream.of(Arguments.of("{\"radar\":\"KTLX\",\"date\":\"2024-13-40\",\"start\":\"10:00\",\"end\":\"11:00\"}", "date"),
				Arguments.of("{\"radar\":\"KTLX\",\"date\":\"yesterday\",\"start\":\"10:00\",\"end\":\"11:00\"}", "date"),
				Arguments.of("{\"radar\":\"KTLX\",\"date\":\"2030-01-01\",\"start\":\"10:00\",\"end\":\"11:00\"}", "date"),
				Arguments.of("{\"radar\":\"KTLX\",\"date\":\"1980-01-01\",\"start\":\"10:00\",\"end\":\"11:00\"}", "date"),
				Arguments.of("{\"radar\":\"XXXX\",\"date\":\"2024-05-20\",\"start\":\"10:00\",\"end\":\"11:00\"}", "radar"),
				Arguments.of("{\"radar\":\"ktlx\",\"date\":\"2024-05-20\",\"start\":\"10:00\",\"end\":\"11:00\"}", "radar"),
				Arguments.of("{\"radar\":42,\"date\":\"2024-05-20\",\"start\":\"10:00\",\"end\":\"11:00\"}", "radar"),
				Arguments.of("{\"date\":\"2024-05-20\",\"start\":\"10:00\",\"end\":\"11:00\"}", "radar"),
				Arguments.of("{\"radar\":\"KTLX\",\"date\":\"2024-05-20\",\"start\":\"11:00\",\"end\":\"10:00\"}", "end"),
				Arguments.of("{\"radar\":\"KTLX\",\"date\":\"2024-05-20\",\"start\":\"10:00\",\"end\":\"10:00\"}", "end"),
				Arguments.of("{\"radar\":\"KTLX\",\"date\":\"2024-05-20\",\"start\":\"25:00\",\"end\":\"26:00\"}", "start"),
				Arguments.of("{\"radar\":\"KTLX\",\"date\":\"2024-05-20\",\"start\":[],\"end\":\"11:00\"}", "start"),
				Arguments.of("{\"radar\":\"" + LONG + "\",\"date\":\"2024-05-20\",\"start\":\"10:00\",\"end\":\"11:00\"}", "radar"),
				Arguments.of("{\"radar\":\"KTLX\",\"date\":\"" + LONG + "\",\"start\":\"10:00\",\"end\":\"11:00\"}", "date"),
				Arguments.of("{\"radar\":\"KTLX\",\"date\":\"2024-05-20\",\"start\":\"10:00\",\"end\":\"11:00\",\"note\":\"" + LONG + "\"}", "note"),
				Arguments.of("[1,2,3]", "body"), Arguments.of("\"KTLX\"", "body"), Arguments.of("{\"radar\":", "body"),
				Arguments.of("", "body"), Arguments.of("null", "body"));
	}

	@ParameterizedTest
	@MethodSource("badBodies")
	void aBadBodyIs400NamingTheField(String body, String field) throws Exception {
		MvcResult result = this.mvc
			.perform(post("/api/v1/data").header("Authorization", TestTokens.bearer("alice"))
				.contentType(MediaType.APPLICATION_JSON)
				.content(body))
			.andExpect(status().isBadRequest())
			.andExpect(jsonPath("$.field").value(field))
			.andReturn();
		assertThat(result.getResponse().getContentAsString()).as("the answer does not echo huge input").hasSizeLessThan(500);
		verifyNoInteractions(this.activity);
	}

	@Test
	void aTooLongTestIdIs400NamingTheHeader() throws Exception {
		this.mvc.perform(post("/api/v1/data").header("Authorization", TestTokens.bearer("alice"))
			.header("X-Elves-Test-Id", "t".repeat(201))
			.contentType(MediaType.APPLICATION_JSON)
			.content(VALID)).andExpect(status().isBadRequest()).andExpect(jsonPath("$.field").value("X-Elves-Test-Id"));
	}

	@Test
	void aTestIdWithOtherCharactersIs400NamingTheHeader() throws Exception {
		this.mvc.perform(post("/api/v1/data").header("Authorization", TestTokens.bearer("alice"))
			.header("X-Elves-Test-Id", "local/case 1a/0\"")
			.contentType(MediaType.APPLICATION_JSON)
			.content(VALID)).andExpect(status().isBadRequest()).andExpect(jsonPath("$.field").value("X-Elves-Test-Id"));
		verifyNoInteractions(this.activity);
	}

	@Test
	void aBodyOverTheLimitIs413BeforeTheTokenIsEvenRead() throws Exception {
		String huge = "{\"radar\":\"" + MEGABYTE + "\"}";
		this.mvc.perform(post("/api/v1/data").header("Authorization", TestTokens.bearer("alice"))
			.contentType(MediaType.APPLICATION_JSON)
			.content(huge)).andExpect(status().isContentTooLarge()).andExpect(jsonPath("$.field").value("body"));
		this.mvc.perform(post("/api/v1/data").contentType(MediaType.APPLICATION_JSON).content(huge))
			.andExpect(status().isContentTooLarge());
		verifyNoInteractions(this.activity);
	}

	@Test
	void aWrongContentTypeIs415() throws Exception {
		this.mvc.perform(post("/api/v1/data").header("Authorization", TestTokens.bearer("alice"))
			.contentType(MediaType.TEXT_PLAIN)
			.content(VALID)).andExpect(status().isUnsupportedMediaType());
	}

	@Test
	void anAcceptItCannotAnswerIs406BeforeAnythingIsQueued() throws Exception {
		// After the publish, a 406 would leave work done that the caller was told was refused.
		this.mvc.perform(post("/api/v1/data").header("Authorization", TestTokens.bearer("alice"))
			.header("Accept", "image/png")
			.contentType(MediaType.APPLICATION_JSON)
			.content(VALID))
			.andExpect(status().isNotAcceptable())
			.andExpect(jsonPath("$.field").value("Accept"));
		verifyNoInteractions(this.activity);
	}

	@Test
	void whenTheBrokerCannotConfirmTheAnswerIs503WithRetryAfterAndNoneOfTheBrokersWords() throws Exception {
		given(this.activity.requestData(any(), any()))
			.willThrow(new PublishFailedException("broker unreachable: Connection refused", null));

		this.mvc.perform(post("/api/v1/data").header("Authorization", TestTokens.bearer("alice"))
			.contentType(MediaType.APPLICATION_JSON)
			.content(VALID))
			.andExpect(status().isServiceUnavailable())
			.andExpect(header().exists("Retry-After"))
			.andExpect(jsonPath("$.error").value(org.hamcrest.Matchers.startsWith("message broker unavailable")))
			.andExpect(jsonPath("$.error").value(org.hamcrest.Matchers.not(org.hamcrest.Matchers.containsString("refused"))));
	}

	@Test
	void whenAQueueIsFullTheAnswerIs503SayingSo() throws Exception {
		given(this.activity.requestData(any(), any()))
			.willThrow(new PublishRejectedException("broker refused message x: reject-publish"));

		this.mvc.perform(post("/api/v1/data").header("Authorization", TestTokens.bearer("alice"))
			.contentType(MediaType.APPLICATION_JSON)
			.content(VALID))
			.andExpect(status().isServiceUnavailable())
			.andExpect(header().exists("Retry-After"))
			.andExpect(jsonPath("$.error").value(org.hamcrest.Matchers.startsWith("the queue is full")));
	}

	/** Random JSON shapes in every field: whatever comes in, the answer is never a 5xx. */
	@Test
	void noBodyGivesA500() throws Exception {
		Random random = new Random(42);
		List<String> values = List.of("null", "true", "0", "-1.5e300", "\"\"", "\"KTLX\"", "\"2024-05-20\"",
				"\"10:00\"", "{}", "[]", "[\"KTLX\"]", "{\"a\":{}}", "\"\\u0000\"", "\"" + "é".repeat(5000) + "\"",
				"123456789012345678901234567890");
		List<String> names = List.of("radar", "date", "start", "end", "", "RADAR", "\\u0000");
		for (int i = 0; i < 300; i++) {
			StringBuilder body = new StringBuilder("{");
			int fields = random.nextInt(6);
			for (int f = 0; f < fields; f++) {
				body.append(f == 0 ? "" : ",")
					.append('"')
					.append(names.get(random.nextInt(names.size())))
					.append("\":")
					.append(values.get(random.nextInt(values.size())));
			}
			body.append('}');
			int status = this.mvc
				.perform(post("/api/v1/data").header("Authorization", TestTokens.bearer("alice"))
					.contentType(MediaType.APPLICATION_JSON)
					.content(body.toString()))
				.andReturn()
				.getResponse()
				.getStatus();
			assertThat(status).as(body.toString()).isLessThan(500);
		}
		verify(this.activity, org.mockito.Mockito.never()).requestData(any(), any());
	}

	@TestConfiguration
	static class FixedClock {

		@Bean
		Clock clock() {
			return Clock.fixed(Instant.parse("2026-01-15T12:00:00Z"), ZoneOffset.UTC);
		}

	}

}
