package dev.elves.registry.web;

import dev.elves.registry.schema.SchemaMigrator;
import dev.elves.web.ApiError;
import dev.elves.web.ClientErrorAdvice;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.dao.DataAccessException;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.transaction.CannotCreateTransactionException;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;

/** Beyond the shared 4xx answers: the database away is a 503 saying why, never a 500. */
@RestControllerAdvice
class ApiExceptionHandler extends ClientErrorAdvice {

	private static final Logger log = LoggerFactory.getLogger(ApiExceptionHandler.class);

	private final SchemaMigrator schema;

	ApiExceptionHandler(SchemaMigrator schema) {
		super("{\"userId\":\"alice\",\"endpoint\":\"addAppLog\"}");
		this.schema = schema;
	}

	@ExceptionHandler({ DataAccessException.class, CannotCreateTransactionException.class })
	ResponseEntity<ApiError> databaseAway(RuntimeException ex) {
		String notReady = this.schema.problem();
		log.warn("answering 503: {}", (notReady != null) ? notReady : ex.getMessage());
		// The database's own words stay in the log.
		return answer(HttpStatus.SERVICE_UNAVAILABLE, (notReady != null) ? "database schema not ready, try again later"
				: "database unavailable, try again later", null);
	}

}
