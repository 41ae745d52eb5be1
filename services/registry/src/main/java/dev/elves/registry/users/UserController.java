package dev.elves.registry.users;

import java.time.Instant;

import dev.elves.registry.web.Page;
import dev.elves.registry.web.StoredText;
import dev.elves.web.NotFoundException;
import dev.elves.web.Paging;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.RowMapper;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/** getUser and getAllUsers. A user exists from their first stored activity on. */
@RestController
class UserController {

	record User(String id, Instant firstSeen) {
	}

	private static final RowMapper<User> USER = (row, n) -> new User(row.getString("id"),
			row.getTimestamp("first_seen").toInstant());

	private final JdbcTemplate jdbc;

	UserController(JdbcTemplate jdbc) {
		this.jdbc = jdbc;
	}

	@GetMapping("/api/v1/users/{id}")
	User getUser(@PathVariable String id) {
		return this.jdbc.query("SELECT id, first_seen FROM users WHERE id = ?", USER, StoredText.check("id", id))
			.stream()
			.findFirst()
			.orElseThrow(() -> new NotFoundException("id", "no user " + id + " (none of their activities is stored)"));
	}

	@GetMapping("/api/v1/users")
	Page<User> getAllUsers(@RequestParam(defaultValue = "0") int page, @RequestParam(defaultValue = "100") int size) {
		Paging paging = new Paging(page, size);
		return Page.of(paging, this.jdbc.query("SELECT id, first_seen FROM users ORDER BY id LIMIT ? OFFSET ?",
				USER, paging.size() + 1, paging.offset()));
	}

}
