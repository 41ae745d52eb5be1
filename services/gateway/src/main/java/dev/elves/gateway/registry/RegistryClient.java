package dev.elves.gateway.registry;

import java.net.ConnectException;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import dev.elves.contracts.ElvesHeaders;
import dev.elves.contracts.MetricNames;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import org.apache.hc.client5.http.ConnectTimeoutException;
import org.apache.hc.client5.http.config.ConnectionConfig;
import org.apache.hc.client5.http.config.RequestConfig;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.HttpClients;
import org.apache.hc.client5.http.impl.io.PoolingHttpClientConnectionManagerBuilder;
import org.apache.hc.core5.util.TimeValue;
import org.apache.hc.core5.util.Timeout;

import org.springframework.beans.factory.DisposableBean;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.client.HttpComponentsClientHttpRequestFactory;
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
 * <p>
 * Calls go over a pool of keep-alive connections with blocking I/O: the JDK client this
 * replaces started a thread for every timed-out call and spent a sixth of the gateway's CPU
 * (JFR profile of the read path). The pool is also the bulkhead: at most {@code maxConcurrent} calls at a
 * time; a read that finds no place within {@code queueTimeout} is refused with
 * {@link RegistryBusyException} (429, Retry-After) instead of holding a web thread behind a
 * slow registry, so reads cannot take every thread getData needs.
 */
@Component
public class RegistryClient implements DisposableBean {

	private static final TimeValue IDLE_EVICTION = TimeValue.ofSeconds(30);

	private final RestClient client;

	private final CloseableHttpClient http;

	private final URI baseUrl;

	private final Semaphore places;

	private final long queueTimeoutNanos;

	private final Counter refused;

	RegistryClient(RestClient.Builder builder, RegistryProperties properties, MeterRegistry meters) {
		ConnectionConfig connection = ConnectionConfig.custom()
			.setConnectTimeout(Timeout.of(properties.connectTimeout()))
			.setSocketTimeout(Timeout.of(properties.readTimeout()))
			.build();
		this.http = HttpClients.custom()
			.setConnectionManager(PoolingHttpClientConnectionManagerBuilder.create()
				.setMaxConnTotal(properties.maxConcurrent())
				.setMaxConnPerRoute(properties.maxConcurrent())
				.setDefaultConnectionConfig(connection)
				.build())
			.setDefaultRequestConfig(RequestConfig.custom()
				.setResponseTimeout(Timeout.of(properties.readTimeout()))
				.setConnectionRequestTimeout(Timeout.of(properties.connectTimeout()))
				.setRedirectsEnabled(false)
				.build())
			.evictIdleConnections(IDLE_EVICTION)
			.disableAutomaticRetries()
			.disableCookieManagement()
			.disableContentCompression()
			.disableAuthCaching()
			.build();
		this.baseUrl = properties.url();
		this.places = new Semaphore(properties.maxConcurrent());
		this.queueTimeoutNanos = properties.queueTimeout().toNanos();
		this.refused = meters.counter(MetricNames.REQUESTS_REFUSED, "bulkhead", "registry");
		// The one place the registry's client is built: its defaults (headers) belong here.
		this.client = builder.clone()
			.baseUrl(properties.url().toString())
			.requestFactory(new HttpComponentsClientHttpRequestFactory(this.http))
			.observationRegistry(ObservationRegistry.NOOP)
			.defaultHeaders((headers) -> headers.set(ElvesHeaders.SERVICE_KEY, properties.serviceKey()))
			.build();
	}

	@Override
	public void destroy() throws Exception {
		this.http.close();
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
		enter(path);
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
		finally {
			this.places.release();
		}
	}

	private void enter(String path) {
		boolean entered;
		try {
			entered = this.places.tryAcquire(this.queueTimeoutNanos, TimeUnit.NANOSECONDS);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			entered = false;
		}
		if (!entered) {
			this.refused.increment();
			throw new RegistryBusyException("too many calls to the registry at once; " + path + " refused, try again");
		}
	}

	private RuntimeException translate(ResourceAccessException ex, String path) {
		Throwable cause = ex.getCause();
		if (cause instanceof ConnectException || cause instanceof ConnectTimeoutException) {
			return new RegistryUnavailableException("registry unreachable at " + this.baseUrl + ": "
					+ cause.getClass().getSimpleName(), ex);
		}
		if (cause instanceof SocketTimeoutException) {
			return new RegistryTimeoutException("registry did not answer " + path + " in time", ex);
		}
		return new RegistryUnavailableException("registry unreachable at " + this.baseUrl + ": " + ex.getMessage(), ex);
	}

	private static String describe(HttpStatusCode status) {
		return String.valueOf(status.value());
	}

}
