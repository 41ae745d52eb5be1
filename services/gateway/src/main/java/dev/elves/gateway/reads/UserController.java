package dev.elves.gateway.reads;

import java.util.Collections;
import java.util.Map;

import dev.elves.gateway.activity.ActivityLog;
import dev.elves.gateway.activity.Endpoints;
import dev.elves.gateway.registry.RegistryClient;
import dev.elves.gateway.web.Call;
import dev.elves.web.NotFoundException;
import dev.elves.web.Paging;

import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

import tools.jackson.databind.json.JsonMapper;

/** getUser (the caller) and getAllUsers (admins only, enforced by the security chain). */
@RestController
class UserController {

	private final RegistryClient registry;

	private final ActivityLog activity;

	private final JsonMapper mapper;

	UserController(RegistryClient registry, ActivityLog activity, JsonMapper mapper) {
		this.registry = registry;
		this.activity = activity;
		this.mapper = mapper;
	}

	/** A user the registry has not recorded yet (first call ever) is still a user: firstSeen null. */
	@GetMapping(path = "/api/v1/users/me", produces = MediaType.APPLICATION_JSON_VALUE)
	ResponseEntity<String> me(Call call) {
		String user = this.registry.json("/api/v1/users/{id}", Map.of("id", call.userId()), Map.of(), call.testId())
			.orElseGet(() -> this.mapper.writeValueAsString(Collections.singletonMap("id", call.userId())));
		this.activity.record(call, Endpoints.GET_USER, null);
		return ResponseEntity.ok().contentType(MediaType.APPLICATION_JSON).body(user);
	}

	@GetMapping(path = "/api/v1/users", produces = MediaType.APPLICATION_JSON_VALUE)
	ResponseEntity<String> all(@RequestParam(defaultValue = "0") int page, @RequestParam(defaultValue = "100") int size,
			Call call) {
		String users = this.registry.json("/api/v1/users", Map.of(), new Paging(page, size).query(), call.testId())
			.orElseThrow(() -> new NotFoundException("registry has no user list endpoint"));
		this.activity.record(call, Endpoints.GET_ALL_USERS, null);
		return ResponseEntity.ok().contentType(MediaType.APPLICATION_JSON).body(users);
	}

}
