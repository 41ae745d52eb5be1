package dev.elves.gateway.reads;

import java.util.HashMap;
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

/** getHistory (the caller's latest 20 activities) and getAllHistory (all of them, paged). */
@RestController
class HistoryController {

	static final int LATEST = 20;

	private final RegistryClient registry;

	private final ActivityLog activity;

	HistoryController(RegistryClient registry, ActivityLog activity) {
		this.registry = registry;
		this.activity = activity;
	}

	@GetMapping(path = "/api/v1/history", produces = MediaType.APPLICATION_JSON_VALUE)
	ResponseEntity<String> history(@RequestParam(defaultValue = "false") boolean all,
			@RequestParam(defaultValue = "0") int page, @RequestParam(defaultValue = "100") int size, Call call) {
		Map<String, Object> query = new HashMap<>();
		query.put("user", call.userId());
		if (all) {
			query.put("all", true);
			query.putAll(new Paging(page, size).query());
		}
		else {
			query.put("limit", LATEST);
		}
		String logs = this.registry.json("/api/v1/logs", Map.of(), query, call.testId())
			.orElseThrow(() -> new NotFoundException("registry has no activity log endpoint"));
		this.activity.record(call, all ? Endpoints.GET_ALL_HISTORY : Endpoints.GET_HISTORY, null);
		return ResponseEntity.ok().contentType(MediaType.APPLICATION_JSON).body(logs);
	}

}
