package dev.elves.web;

import jakarta.servlet.RequestDispatcher;
import org.junit.jupiter.api.Test;

import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.mock.web.MockHttpServletRequest;

import static org.assertj.core.api.Assertions.assertThat;

/** What the container refused reaches the caller as our JSON error, its status kept, whatever it accepts. */
class JsonErrorPageTest {

	@Test
	void aRequestTheContainerRefusedKeepsItsStatusAsJsonEvenWhenAPngIsAsked() {
		MockHttpServletRequest request = new MockHttpServletRequest("GET", "/error");
		request.addHeader("Accept", "image/png");
		request.setAttribute(RequestDispatcher.ERROR_STATUS_CODE, 400);
		request.setAttribute(RequestDispatcher.ERROR_REQUEST_URI, "/api/v1/users");

		ResponseEntity<ApiError> answer = new JsonErrorPage().error(request);

		assertThat(answer.getStatusCode().value()).isEqualTo(400);
		assertThat(answer.getHeaders().getContentType()).isEqualTo(MediaType.APPLICATION_JSON);
		assertThat(answer.getBody()).isEqualTo(new ApiError("bad request: /api/v1/users", null));
	}

	@Test
	void withoutAStatusItIsA500() {
		ResponseEntity<ApiError> answer = new JsonErrorPage().error(new MockHttpServletRequest("GET", "/error"));
		assertThat(answer.getStatusCode().value()).isEqualTo(500);
	}

}
