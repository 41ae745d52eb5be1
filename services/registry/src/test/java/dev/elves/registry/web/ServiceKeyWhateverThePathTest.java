package dev.elves.registry.web;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.elves.contracts.ElvesHeaders;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.boot.tomcat.servlet.TomcatServletWebServerFactory;
import org.springframework.boot.web.server.WebServer;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.util.unit.DataSize;

import tools.jackson.databind.json.JsonMapper;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * On a real Tomcat, with the service key filter registered as the registry registers it: no
 * spelling of a path reaches a servlet without the key. One servlet takes every path, as the
 * DispatcherServlet does, and records the path Tomcat gave it (decoded and normalised).
 */
class ServiceKeyWhateverThePathTest {

	private static final String KEY = "registry-key-for-the-tests";

	/** Spellings Tomcat reads as {@code /api/v1/users}; a raw-path test saw none of them as the API. */
	private static final List<String> ROUTED = List.of("/api/v1/users", "/%61pi/v1/users", "/%61%70%69/v1/users",
			"/api;/v1/users", "/api/v1;x=y/users", "/api;jsessionid=1/v1/users", "/x/../api/v1/users",
			"/./api/v1/users", "/api/./v1/users", "//api/v1/users", "/api//v1/users");

	/** What else the port answers: none of it is open either. */
	private static final List<String> ELSEWHERE = List.of("/", "/openapi.yaml", "/error", "/actuator/health",
			"/no-such-path");

	/** Encoded slashes: Tomcat refuses them itself (400) before any filter. */
	private static final List<String> REFUSED_BY_TOMCAT = List.of("/api%2Fv1/users", "/api%2fv1/users");

	private final List<String> served = new CopyOnWriteArrayList<>();

	private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

	private WebServer server;

	@BeforeEach
	void start() {
		FilterRegistrationBean<ServiceKeyFilter> filter = new ApiWebConfiguration()
			.serviceKeyFilter(new ApiProperties(KEY, DataSize.ofKilobytes(16)), JsonMapper.builder().build());
		assertThat(filter.getUrlPatterns()).as("registered for every path").isEmpty();
		HttpServlet dispatcher = new HttpServlet() {
			@Override
			protected void doGet(HttpServletRequest request, HttpServletResponse response) throws IOException {
				ServiceKeyWhateverThePathTest.this.served.add(request.getServletPath());
				response.getWriter().write("reached");
			}
		};
		this.server = new TomcatServletWebServerFactory(0).getWebServer(filter,
				(context) -> context.addServlet("dispatcher", dispatcher).addMapping("/"));
		this.server.start();
	}

	@AfterEach
	void stop() {
		this.server.stop();
	}

	private HttpResponse<String> get(String path, String key) throws Exception {
		HttpRequest.Builder request = HttpRequest
			.newBuilder(URI.create("http://127.0.0.1:" + this.server.getPort() + path))
			.timeout(Duration.ofSeconds(10));
		if (key != null) {
			request.header(ElvesHeaders.SERVICE_KEY, key);
		}
		return this.client.send(request.build(), HttpResponse.BodyHandlers.ofString());
	}

	@Test
	void withoutTheKeyNoSpellingReachesTheApi() throws Exception {
		for (String path : ROUTED) {
			for (String key : new String[] { null, KEY + "x" }) {
				HttpResponse<String> answer = get(path, key);
				assertThat(answer.statusCode()).as(path).isEqualTo(401);
				assertThat(answer.body()).as(path).contains("\"field\":\"" + ElvesHeaders.SERVICE_KEY + "\"");
			}
		}
		for (String path : ELSEWHERE) {
			assertThat(get(path, null).statusCode()).as(path).isEqualTo(401);
		}
		for (String path : REFUSED_BY_TOMCAT) {
			assertThat(get(path, null).statusCode()).as(path).isIn(400, 401);
		}
		assertThat(this.served).as("calls that reached the servlet without the key").isEmpty();
	}

	@Test
	void withTheKeyEverySpellingIsTheApi() throws Exception {
		for (String path : ROUTED) {
			HttpResponse<String> answer = get(path, KEY);
			assertThat(answer.statusCode()).as(path).isEqualTo(200);
			assertThat(answer.body()).as(path).isEqualTo("reached");
		}
		assertThat(this.served).hasSize(ROUTED.size()).containsOnly("/api/v1/users");
	}

}
