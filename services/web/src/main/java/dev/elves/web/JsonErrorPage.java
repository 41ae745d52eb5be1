package dev.elves.web;

import jakarta.servlet.RequestDispatcher;
import jakarta.servlet.http.HttpServletRequest;

import org.springframework.boot.webmvc.error.ErrorController;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * The error page of what never reached a controller (a request the container or a filter refused:
 * a malformed query string is a 400 from Tomcat) as our JSON error, whatever the request accepts.
 * Spring Boot's own page negotiates: an HTML page for {@code Accept: text/html}, an empty body for
 * {@code image/png} (found by the OpenAPI fuzz run sending each call with another Accept).
 */
@RestController
public class JsonErrorPage implements ErrorController {

	@RequestMapping("${server.error.path:/error}")
	ResponseEntity<ApiError> error(HttpServletRequest request) {
		Object code = request.getAttribute(RequestDispatcher.ERROR_STATUS_CODE);
		HttpStatus status = (code instanceof Integer value) ? HttpStatus.resolve(value) : null;
		if (status == null) {
			status = HttpStatus.INTERNAL_SERVER_ERROR;
		}
		return ClientErrorAdvice.error(status).body(new ApiError(status.getReasonPhrase().toLowerCase()
				+ ": " + request.getAttribute(RequestDispatcher.ERROR_REQUEST_URI), null));
	}

}
