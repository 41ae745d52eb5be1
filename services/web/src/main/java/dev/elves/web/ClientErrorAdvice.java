package dev.elves.web;

import org.springframework.http.HttpStatus;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.http.converter.HttpMessageNotReadableException;
import org.springframework.web.HttpMediaTypeNotAcceptableException;
import org.springframework.web.HttpMediaTypeNotSupportedException;
import org.springframework.web.HttpRequestMethodNotSupportedException;
import org.springframework.web.bind.MissingRequestHeaderException;
import org.springframework.web.bind.MissingServletRequestParameterException;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.method.annotation.MethodArgumentTypeMismatchException;
import org.springframework.web.servlet.resource.NoResourceFoundException;

/**
 * The caller's mistakes as 4xx with a JSON {@link ApiError} that names the field, the same in
 * every service. A service's {@code @RestControllerAdvice} extends this and adds the answers for
 * its own dependencies (503/504); only a bug is left to be a 500. Every answer here is built by
 * {@link #error}: JSON whatever the request accepts.
 */
public abstract class ClientErrorAdvice {

	private final String bodyExample;

	/** @param bodyExample a valid request body, shown when the body cannot be read at all */
	protected ClientErrorAdvice(String bodyExample) {
		this.bodyExample = bodyExample;
	}

	@ExceptionHandler
	ResponseEntity<ApiError> invalidInput(InvalidInputException ex) {
		return answer(HttpStatus.BAD_REQUEST, ex.getMessage(), ex.field());
	}

	@ExceptionHandler
	ResponseEntity<ApiError> unreadableBody(HttpMessageNotReadableException ex) {
		for (Throwable cause = ex; cause != null; cause = (cause.getCause() != cause) ? cause.getCause() : null) {
			if (cause instanceof BodyLimitFilter.BodyTooLargeException tooLarge) {
				return tooLarge(tooLarge);
			}
		}
		return answer(HttpStatus.BAD_REQUEST, "body: expected a JSON object like " + this.bodyExample, "body");
	}

	@ExceptionHandler
	ResponseEntity<ApiError> tooLarge(BodyLimitFilter.BodyTooLargeException ex) {
		return error(HttpStatus.CONTENT_TOO_LARGE).body(ex.error());
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

	/** An Accept the endpoint cannot answer (a PNG asked of a JSON read): 406 naming what it answers. */
	@ExceptionHandler
	ResponseEntity<ApiError> notAcceptable(HttpMediaTypeNotAcceptableException ex) {
		String answers = ex.getSupportedMediaTypes().isEmpty() ? "application/json"
				: MediaType.toString(ex.getSupportedMediaTypes());
		return answer(HttpStatus.NOT_ACCEPTABLE, "Accept: this endpoint answers " + answers, "Accept");
	}

	@ExceptionHandler
	ResponseEntity<ApiError> wrongMethod(HttpRequestMethodNotSupportedException ex) {
		return answer(HttpStatus.METHOD_NOT_ALLOWED, ex.getMethod() + " is not supported here", null);
	}

	@ExceptionHandler
	ResponseEntity<ApiError> notFound(NotFoundException ex) {
		return answer(HttpStatus.NOT_FOUND, ex.getMessage(), ex.field());
	}

	@ExceptionHandler
	ResponseEntity<ApiError> noSuchPath(NoResourceFoundException ex) {
		return answer(HttpStatus.NOT_FOUND, "no such endpoint: /" + ex.getResourcePath(), null);
	}

	protected static ResponseEntity<ApiError> answer(HttpStatus status, String error, String field) {
		return error(status).body(new ApiError(error, field));
	}

	/**
	 * An error answer's start: its status, and JSON as its type, set here rather than negotiated.
	 * Negotiated, the error of an endpoint that also produces a PNG (a plot) follows the request's
	 * {@code Accept: image/png}, no converter can write an {@link ApiError} as a PNG, and the 404
	 * of an unknown plot became a 500. A preset type is written as it is, whatever the Accept.
	 */
	protected static ResponseEntity.BodyBuilder error(HttpStatusCode status) {
		return ResponseEntity.status(status).contentType(MediaType.APPLICATION_JSON);
	}

	private static String typeName(MethodArgumentTypeMismatchException ex) {
		Class<?> type = ex.getRequiredType();
		if (type == null) {
			return "value";
		}
		return (type == int.class || type == Integer.class) ? "whole number" : type.getSimpleName();
	}

}
