package dev.elves.gateway.web;

import dev.elves.contracts.messaging.PublishFailedException;
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
 * The gateway's answers beyond the shared 4xx ones: 404 for what is not there (or not the
 * caller's), 503/504 naming the dependency (broker, registry) that is down or slow.
 */
@RestControllerAdvice
class ApiExceptionHandler extends ClientErrorAdvice {

	private static final Logger log = LoggerFactory.getLogger(ApiExceptionHandler.class);

	/** How soon a refused client may try again. */
	static final String RETRY_AFTER_SECONDS = "1";

	ApiExceptionHandler() {
		super("{\"radar\":\"KTLX\",\"date\":\"2024-05-20\",\"start\":\"10:00\",\"end\":\"11:30\"}");
	}

	@ExceptionHandler
	ResponseEntity<ApiError> notFound(NotFoundException ex) {
		return answer(HttpStatus.NOT_FOUND, ex.getMessage(), null);
	}

	@ExceptionHandler
	ResponseEntity<ApiError> brokerDown(PublishFailedException ex) {
		log.warn("answering 503: {}", ex.getMessage());
		return unavailable("message broker unavailable, try again: " + ex.getMessage());
	}

	@ExceptionHandler
	ResponseEntity<ApiError> registryDown(RegistryUnavailableException ex) {
		log.warn("answering 503: {}", ex.getMessage());
		return unavailable(ex.getMessage());
	}

	/** Refused before any work: no log line per refusal (an overload would flood the log). */
	@ExceptionHandler
	ResponseEntity<ApiError> registryBusy(RegistryBusyException ex) {
		return unavailable(ex.getMessage());
	}

	@ExceptionHandler
	ResponseEntity<ApiError> registrySlow(RegistryTimeoutException ex) {
		log.warn("answering 504: {}", ex.getMessage());
		return answer(HttpStatus.GATEWAY_TIMEOUT, ex.getMessage(), null);
	}

	/** 503 with Retry-After: the client may come back soon, the dependency or the capacity may be back. */
	private static ResponseEntity<ApiError> unavailable(String message) {
		return ResponseEntity.status(HttpStatus.SERVICE_UNAVAILABLE)
			.header(HttpHeaders.RETRY_AFTER, RETRY_AFTER_SECONDS)
			.body(answer(HttpStatus.SERVICE_UNAVAILABLE, message, null).getBody());
	}

}
