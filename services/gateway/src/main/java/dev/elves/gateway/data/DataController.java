package dev.elves.gateway.data;

import java.util.Map;
import java.util.UUID;

import dev.elves.contracts.DataRequest;
import dev.elves.gateway.activity.ActivityLog;
import dev.elves.gateway.web.Call;

import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

import tools.jackson.databind.JsonNode;

/** getData: queue a plot request and answer at once with its id; the plot comes later. */
@RestController
class DataController {

	private final DataRequestValidator validator;

	private final ActivityLog activity;

	DataController(DataRequestValidator validator, ActivityLog activity) {
		this.validator = validator;
		this.activity = activity;
	}

	// produces: an Accept it cannot answer is refused (406) before anything is published, never after.
	@PostMapping(path = "/api/v1/data", consumes = MediaType.APPLICATION_JSON_VALUE,
			produces = MediaType.APPLICATION_JSON_VALUE)
	ResponseEntity<Map<String, UUID>> getData(@RequestBody(required = false) JsonNode body, Call call) {
		DataRequest request = this.validator.validate(body);
		UUID id = this.activity.requestData(call, request);
		return ResponseEntity.status(HttpStatus.ACCEPTED).body(Map.of("id", id));
	}

}
