package dev.elves.gateway.web;

import java.io.IOException;

import jakarta.servlet.http.HttpServletResponse;

import org.springframework.http.MediaType;

import tools.jackson.databind.json.JsonMapper;

/** Writes an {@link ApiError} where no controller is involved (the security filters). */
public class ErrorBody {

	private final JsonMapper mapper;

	public ErrorBody(JsonMapper mapper) {
		this.mapper = mapper;
	}

	public void write(HttpServletResponse response, int status, String error, String field) throws IOException {
		response.setStatus(status);
		response.setContentType(MediaType.APPLICATION_JSON_VALUE);
		this.mapper.writeValue(response.getOutputStream(), new ApiError(error, field));
	}

}
