package dev.elves.gateway.registry;

import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpTimeoutException;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

import dev.elves.contracts.ElvesHeaders;

import org.springframework.http.HttpStatusCode;
import org.springframework.http.client.JdkClientHttpRequestFactory;
import org.springframework.stereotype.Component;
import org.springframework.web.client.HttpClientErrorException;
import org.springframework.web.client.ResourceAccessException;
import org.springframework.web.client.RestClient;
import org.springframework.web.client.RestClientException;
import org.springframework.web.client.RestClientResponseException;
import org.springframework.web.util.UriBuilder;

/**
 * Reads from the registry's internal API. Every call has a connect and a read timeout; a
 * registry that is down, failing or slow becomes {@link RegistryUnavailableException} or
 * {@link RegistryTimeoutException}, never a hang or a 500.
 */
@Component
public class RegistryClient {

	private final RestClient client;

	private final URI baseUrl;

	RegistryClient(RestClient.Builder builder, RegistryProperties properties) {
		HttpClient http = HttpClient.newBuilder()
			.version(HttpClient.Version.HTTP_1_1)
			.connectTimeout(properties.connectTimeout())
			.build();
		JdkClientHttpRequestFactory factory = new JdkClientHttpRequestFactory(http);
		factory.setReadTimeout(properties.readTimeout());
		this.baseUrl = properties.url();
		this.client = builder.clone().baseUrl(properties.url().toString()).requestFactory(factory)
			.defaultHeaders((headers) -> headers.set(ElvesHeaders.SERVICE_KEY, properties.serviceKey())).build();
	}

	/**
	 * A JSON document, or empty when the registry answers 404.
	 * @param path a URI template such as {@code /api/v1/users/{id}}, filled from
	 * {@code pathVariables}; path and query values are encoded, so no value from a caller can
	 * change the path or add parameters
	 */
	public Optional<String> json(String path, Map<String, ?> pathVariables, Map<String, ?> query, String testId) {
		return get(path, pathVariables, query, testId, String.class);
	}

	/** Raw bytes (a PNG), or empty when the registry answers 404. */
	public Optional<byte[]> bytes(String path, Map<String, ?> pathVariables, Map<String, ?> query, String testId) {
		return get(path, pathVariables, query, testId, byte[].class);
	}

	private <T> Optional<T> get(String path, Map<String, ?> pathVariables, Map<String, ?> query, String testId,
			Class<T> type) {
		Map<String, Object> variables = new HashMap<>(pathVariables);
		Function<UriBuilder, URI> uri = (builder) -> {
			builder.path(path);
			query.forEach((name, value) -> {
				builder.queryParam(name, "{q_" + name + "}");
				variables.put("q_" + name, value);
			});
			return builder.build(variables);
		};
		try {
			return Optional.ofNullable(this.client.get()
				.uri(uri)
				.headers((headers) -> {
					if (testId != null) {
						headers.set(ElvesHeaders.TEST_ID, testId);
					}
				})
				.retrieve()
				.body(type));
		}
		catch (HttpClientErrorException.NotFound ex) {
			return Optional.empty();
		}
		catch (RestClientResponseException ex) {
			throw new RegistryUnavailableException("registry answered " + describe(ex.getStatusCode()) + " for "
					+ path + ": " + ex.getResponseBodyAsString(), ex);
		}
		catch (ResourceAccessException ex) {
			throw translate(ex, path);
		}
		catch (RestClientException ex) {
			throw new RegistryUnavailableException("registry gave an unreadable answer for " + path, ex);
		}
	}

	private RuntimeException translate(ResourceAccessException ex, String path) {
		Throwable cause = ex.getCause();
		if (cause instanceof HttpConnectTimeoutException || cause instanceof ConnectException) {
			return new RegistryUnavailableException("registry unreachable at " + this.baseUrl + ": "
					+ cause.getClass().getSimpleName(), ex);
		}
		if (cause instanceof HttpTimeoutException) {
			return new RegistryTimeoutException("registry did not answer " + path + " in time", ex);
		}
		return new RegistryUnavailableException("registry unreachable at " + this.baseUrl + ": " + ex.getMessage(), ex);
	}

	private static String describe(HttpStatusCode status) {
		return String.valueOf(status.value());
	}

}
