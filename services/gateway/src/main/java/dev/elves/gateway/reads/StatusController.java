package dev.elves.gateway.reads;

import java.util.Map;
import java.util.UUID;

import dev.elves.gateway.activity.ActivityLog;
import dev.elves.gateway.activity.Endpoints;
import dev.elves.gateway.registry.RegistryClient;
import dev.elves.gateway.web.Call;
import dev.elves.web.NotFoundException;

import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RestController;

/**
 * getStatus and getImage. A request the registry has not recorded yet (its log is still
 * queued) is 404 like an unknown one; clients poll on 404 as on QUEUED.
 */
@RestController
class StatusController {

	private final RegistryClient registry;

	private final ActivityLog activity;

	StatusController(RegistryClient registry, ActivityLog activity) {
		this.registry = registry;
		this.activity = activity;
	}

	@GetMapping(path = "/api/v1/status/{id}", produces = MediaType.APPLICATION_JSON_VALUE)
	ResponseEntity<String> getStatus(@PathVariable UUID id, Call call) {
		String status = this.registry.json("/api/v1/requests/{id}", Map.of("id", id), owner(call), call.testId())
			.orElseThrow(() -> new NotFoundException("request " + id + " is not known (yet)"));
		this.activity.record(call, Endpoints.GET_STATUS, id);
		return ResponseEntity.ok().contentType(MediaType.APPLICATION_JSON).body(status);
	}

	// No produces: the answer's type is set, a PNG or (an error) JSON, so no Accept changes its status (an
	// unknown plot is 404 for an image request, an API client, a page load or HEAD alike).
	@GetMapping(path = "/api/v1/plots/{id}")
	ResponseEntity<byte[]> getImage(@PathVariable UUID id, Call call) {
		byte[] png = this.registry.bytes("/api/v1/plots/{id}", Map.of("id", id), owner(call), call.testId())
			.orElseThrow(() -> new NotFoundException("no plot for request " + id + " (unknown, or not DONE yet)"));
		this.activity.record(call, Endpoints.GET_IMAGE, id);
		return ResponseEntity.ok().contentType(MediaType.IMAGE_PNG).body(png);
	}

	/** Admins may read any request; everyone else only their own. */
	private static Map<String, String> owner(Call call) {
		return call.caller().admin() ? Map.of() : Map.of("user", call.userId());
	}

}
