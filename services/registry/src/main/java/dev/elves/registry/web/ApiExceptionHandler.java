package dev.elves.registry.web;

import dev.elves.registry.schema.SchemaMigrator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.dao.DataAccessException;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.http.converter.HttpMessageNotReadableException;
import org.springframework.transaction.CannotCreateTransactionException;
import org.springframework.web.HttpMediaTypeNotSupportedException;
import org.springframework.web.bind.MissingServletRequestParameterException;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import org.springframework.web.method.annotation.MethodArgumentTypeMismatchException;
import org.springframework.web.servlet.resource.NoResourceFoundException;

/** Bad input is a 400 naming the field; the database away is a 503 saying so; never a 500 for either. */
@RestControllerAdvice
class ApiExceptionHandler {

	private static final Logger log = LoggerFactory.getLogger(ApiExceptionHandler.class);

	private final SchemaMigrator schema;

	ApiExceptionHandler(SchemaMigrator schema) {
		this.schema = schema;
	}

	@ExceptionHandler
	ResponseEntity<ApiError> invalidInput(InvalidInputException ex) {
		return answer(HttpStatus.BAD_REQUEST, ex.getMessage(), ex.field());
	}

	@ExceptionHandler
	ResponseEntity<ApiError> unreadableBody(HttpMessageNotReadableException ex) {
		return answer(HttpStatus.BAD_REQUEST, "body: expected a JSON object like {\"userId\":\"alice\",\"endpoint\":\"addAppLog\"}", "body");
	}

	@ExceptionHandler
	ResponseEntity<ApiError> badParameter(MethodArgumentTypeMismatchException ex) {
		return answer(HttpStatus.BAD_REQUEST, ex.getName() + ": not a valid value", ex.getName());
	}

	@ExceptionHandler
	ResponseEntity<ApiError> missingParameter(MissingServletRequestParameterException ex) {
		return answer(HttpStatus.BAD_REQUEST, ex.getParameterName() + ": required", ex.getParameterName());
	}

	@ExceptionHandler
	ResponseEntity<ApiError> unsupportedMediaType(HttpMediaTypeNotSupportedException ex) {
		return answer(HttpStatus.UNSUPPORTED_MEDIA_TYPE, "Content-Type: send application/json", "Content-Type");
	}

	@ExceptionHandler
	ResponseEntity<ApiError> noSuchPath(NoResourceFoundException ex) {
		return answer(HttpStatus.NOT_FOUND, "no such endpoint: /" + ex.getResourcePath(), null);
	}

	@ExceptionHandler({ DataAccessException.class, CannotCreateTransactionException.class })
	ResponseEntity<ApiError> databaseAway(RuntimeException ex) {
		String notReady = this.schema.problem();
		String reason = (notReady != null) ? notReady : "database unavailable: " + ex.getMessage();
		log.warn("answering 503: {}", reason);
		return answer(HttpStatus.SERVICE_UNAVAILABLE, reason, null);
	}

	private static ResponseEntity<ApiError> answer(HttpStatus status, String error, String field) {
		return ResponseEntity.status(status).body(new ApiError(error, field));
	}

}
