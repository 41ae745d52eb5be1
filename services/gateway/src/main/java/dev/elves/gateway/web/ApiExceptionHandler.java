package dev.elves.gateway.web;

import dev.elves.contracts.ElvesHeaders;
import dev.elves.contracts.messaging.PublishFailedException;
import dev.elves.contracts.messaging.PublishRejectedException;
import dev.elves.gateway.overload.CapacityRefusal;
import dev.elves.gateway.registry.RegistryBusyException;
import dev.elves.gateway.registry.RegistryTimeoutException;
import dev.elves.gateway.registry.RegistryUnavailableException;
import dev.elves.web.ApiError;
import dev.elves.web.ClientErrorAdvice;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;

/**
 * The gateway's answers beyond the shared 4xx ones: 429 over a user's rate or the gateway's
 * capacity ({@link CapacityRefusal}), 503 (with Retry-After) / 504 naming the dependency (broker,
 * queue, registry) that is down, full or slow, in our words: what a dependency said is logged only.
 */
@RestControllerAdvice
class ApiExceptionHandler extends ClientErrorAdvice {

	private static final Logger log = LoggerFactory.getLogger(ApiExceptionHandler.class);

	/** What a 503 tells the caller to wait: about a broker restart or a publisher confirm timeout. */
	static final int RETRY_AFTER_SECONDS = 5;

	ApiExceptionHandler() {
		super("{\"radar\":\"KTLX\",\"date\":\"2024-05-20\",\"start\":\"10:00\",\"end\":\"11:30\"}");
	}

	@ExceptionHandler
	ResponseEntity<ApiError> otherTestsId(TestIdNotInTokenException ex) {
		return ResponseEntity.status(HttpStatus.FORBIDDEN).body(new ApiError(ex.getMessage(), ElvesHeaders.TEST_ID));
	}

	@ExceptionHandler
	ResponseEntity<ApiError> queueFull(PublishRejectedException ex) {
		return unavailable(ex, "the queue is full: nothing was accepted, try again later");
	}

	@ExceptionHandler
	ResponseEntity<ApiError> brokerDown(PublishFailedException ex) {
		return unavailable(ex, "message broker unavailable: nothing was accepted, try again later");
	}

	@ExceptionHandler
	ResponseEntity<ApiError> registryDown(RegistryUnavailableException ex) {
		return unavailable(ex, "registry unavailable, try again later");
	}

	/** Refused before any work, as the admission filter refuses; no log line per refusal (an overload floods). */
	@ExceptionHandler
	ResponseEntity<ApiError> registryBusy(RegistryBusyException ex) {
		return error(CapacityRefusal.STATUS)
			.header(HttpHeaders.RETRY_AFTER, CapacityRefusal.RETRY_AFTER_SECONDS)
			.body(new ApiError(ex.getMessage(), null));
	}

	@ExceptionHandler
	ResponseEntity<ApiError> registrySlow(RegistryTimeoutException ex) {
		log.warn("answering 504: {}", ex.getMessage());
		return answer(HttpStatus.GATEWAY_TIMEOUT, "registry did not answer in time, try again later", null);
	}

	@ExceptionHandler
	ResponseEntity<ApiError> tooManyCalls(UserRateLimit.RateLimitedException ex) {
		return error(HttpStatus.TOO_MANY_REQUESTS)
			.header(HttpHeaders.RETRY_AFTER, String.valueOf(ex.retryAfterSeconds()))
			.body(new ApiError(ex.getMessage(), null));
	}

	/** 503 with Retry-After; the dependency's own words go to the log, never to the caller. */
	private static ResponseEntity<ApiError> unavailable(RuntimeException ex, String error) {
		log.warn("answering 503: {}", ex.getMessage());
		return error(HttpStatus.SERVICE_UNAVAILABLE)
			.header(HttpHeaders.RETRY_AFTER, String.valueOf(RETRY_AFTER_SECONDS))
			.body(new ApiError(error, null));
	}

}
