package dev.elves.gateway.web;

import dev.elves.contracts.messaging.PublishFailedException;
import dev.elves.gateway.registry.RegistryTimeoutException;
import dev.elves.gateway.registry.RegistryUnavailableException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.http.converter.HttpMessageNotReadableException;
import org.springframework.web.HttpMediaTypeNotSupportedException;
import org.springframework.web.HttpRequestMethodNotSupportedException;
import org.springframework.web.bind.MissingRequestHeaderException;
import org.springframework.web.bind.MissingServletRequestParameterException;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import org.springframework.web.method.annotation.MethodArgumentTypeMismatchException;
import org.springframework.web.servlet.resource.NoResourceFoundException;

/**
 * Maps every failure to a status and a JSON {@link ApiError}. Bad input is a 4xx that names the
 * field; an unavailable dependency is 503/504 that names it; only a bug is a 500.
 */
@RestControllerAdvice
class ApiExceptionHandler {

	private static final Logger log = LoggerFactory.getLogger(ApiExceptionHandler.class);

	@ExceptionHandler
	ResponseEntity<ApiError> invalidInput(InvalidInputException ex) {
		return answer(HttpStatus.BAD_REQUEST, ex.getMessage(), ex.field());
	}

	@ExceptionHandler
	ResponseEntity<ApiError> unreadableBody(HttpMessageNotReadableException ex) {
		return answer(HttpStatus.BAD_REQUEST, "body: expected a JSON object like "
				+ "{\"radar\":\"KTLX\",\"date\":\"2024-05-20\",\"start\":\"10:00\",\"end\":\"11:30\"}", "body");
	}

	@ExceptionHandler
	ResponseEntity<ApiError> badParameter(MethodArgumentTypeMismatchException ex) {
		return answer(HttpStatus.BAD_REQUEST, ex.getName() + ": not a valid " + typeName(ex), ex.getName());
	}

	@ExceptionHandler
	ResponseEntity<ApiError> missingParameter(MissingServletRequestParameterException ex) {
		return answer(HttpStatus.BAD_REQUEST, ex.getParameterName() + ": required", ex.getParameterName());
	}

	@ExceptionHandler
	ResponseEntity<ApiError> missingHeader(MissingRequestHeaderException ex) {
		return answer(HttpStatus.BAD_REQUEST, ex.getHeaderName() + ": required header", ex.getHeaderName());
	}

	@ExceptionHandler
	ResponseEntity<ApiError> unsupportedMediaType(HttpMediaTypeNotSupportedException ex) {
		return answer(HttpStatus.UNSUPPORTED_MEDIA_TYPE, "Content-Type: send application/json", "Content-Type");
	}

	@ExceptionHandler
	ResponseEntity<ApiError> wrongMethod(HttpRequestMethodNotSupportedException ex) {
		return answer(HttpStatus.METHOD_NOT_ALLOWED, ex.getMethod() + " is not supported here", null);
	}

	@ExceptionHandler
	ResponseEntity<ApiError> noSuchPath(NoResourceFoundException ex) {
		return answer(HttpStatus.NOT_FOUND, "no such endpoint: /" + ex.getResourcePath(), null);
	}

	@ExceptionHandler
	ResponseEntity<ApiError> notFound(NotFoundException ex) {
		return answer(HttpStatus.NOT_FOUND, ex.getMessage(), null);
	}

	@ExceptionHandler
	ResponseEntity<ApiError> brokerDown(PublishFailedException ex) {
		log.warn("answering 503: {}", ex.getMessage());
		return answer(HttpStatus.SERVICE_UNAVAILABLE, "message broker unavailable, try again: " + ex.getMessage(),
				null);
	}

	@ExceptionHandler
	ResponseEntity<ApiError> registryDown(RegistryUnavailableException ex) {
		log.warn("answering 503: {}", ex.getMessage());
		return answer(HttpStatus.SERVICE_UNAVAILABLE, ex.getMessage(), null);
	}

	@ExceptionHandler
	ResponseEntity<ApiError> registrySlow(RegistryTimeoutException ex) {
		log.warn("answering 504: {}", ex.getMessage());
		return answer(HttpStatus.GATEWAY_TIMEOUT, ex.getMessage(), null);
	}

	private static String typeName(MethodArgumentTypeMismatchException ex) {
		Class<?> type = ex.getRequiredType();
		if (type == null) {
			return "value";
		}
		return (type == int.class || type == Integer.class) ? "whole number" : type.getSimpleName();
	}

	private static ResponseEntity<ApiError> answer(HttpStatus status, String error, String field) {
		return ResponseEntity.status(status).body(new ApiError(error, field));
	}

}
