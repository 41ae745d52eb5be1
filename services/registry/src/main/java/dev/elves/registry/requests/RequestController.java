package dev.elves.registry.requests;

import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalTime;
import java.util.UUID;

import com.fasterxml.jackson.annotation.JsonInclude;
import dev.elves.registry.web.StoredText;
import dev.elves.web.NotFoundException;

import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * A request's status and its plot. With {@code user}, another user's request is 404, so the
 * gateway can hand these out without leaking who asked for what.
 */
@RestController
class RequestController {

	@JsonInclude(JsonInclude.Include.NON_NULL)
	record RequestStatus(UUID id, String status, String userId, String radar, LocalDate date, LocalTime start,
			LocalTime end, String error, Instant updated) {
	}

	private final JdbcTemplate jdbc;

	RequestController(JdbcTemplate jdbc) {
		this.jdbc = jdbc;
	}

	@GetMapping("/api/v1/requests/{id}")
	RequestStatus status(@PathVariable UUID id, @RequestParam(required = false) String user) {
		StoredText.check("user", user);
		return this.jdbc.query("""
				SELECT id, status, user_id, radar, day, start_time, end_time, error, updated FROM requests
				WHERE id = ? AND (?::text IS NULL OR user_id = ?)
				""", (row, n) -> new RequestStatus(row.getObject("id", UUID.class), row.getString("status"),
				row.getString("user_id"), row.getString("radar"), row.getObject("day", LocalDate.class),
				row.getObject("start_time", LocalTime.class), row.getObject("end_time", LocalTime.class),
				row.getString("error"), row.getTimestamp("updated").toInstant()), id, user, user)
			.stream()
			.findFirst()
			.orElseThrow(() -> new NotFoundException("id", "no request " + id + ofUser(user)));
	}

	@GetMapping("/api/v1/plots/{id}")
	ResponseEntity<byte[]> plot(@PathVariable UUID id, @RequestParam(required = false) String user) {
		StoredText.check("user", user);
		return this.jdbc.query("""
				SELECT p.png FROM plots p JOIN requests r ON r.id = p.request_id
				WHERE p.request_id = ? AND (?::text IS NULL OR r.user_id = ?)
				""", (row, n) -> row.getBytes(1), id, user, user)
			.stream()
			.findFirst()
			.map((png) -> ResponseEntity.ok().contentType(MediaType.IMAGE_PNG).body(png))
			.orElseThrow(() -> new NotFoundException("id",
					"no plot for request " + id + ofUser(user) + " (unknown, or not DONE yet)"));
	}

	private static String ofUser(String user) {
		return (user != null) ? " of user " + user : "";
	}

}
