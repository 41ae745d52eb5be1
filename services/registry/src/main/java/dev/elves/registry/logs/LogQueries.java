package dev.elves.registry.logs;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.UUID;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

/** A user's activities, newest first, read through the (user_id, time desc, id desc) index. */
@Component
class LogQueries {

	private static final String SELECT = """
			SELECT id, user_id, endpoint, request_id, test_id, time FROM activity_logs
			WHERE user_id = ? ORDER BY time DESC, id DESC LIMIT ? OFFSET ?
			""";

	private final JdbcTemplate jdbc;

	LogQueries(JdbcTemplate jdbc) {
		this.jdbc = jdbc;
	}

	List<LogEntry> newest(String userId, int limit, long offset) {
		return this.jdbc.query(SELECT, LogQueries::entry, userId, limit, offset);
	}

	private static LogEntry entry(ResultSet row, int n) throws SQLException {
		return new LogEntry(row.getObject("id", UUID.class), row.getString("user_id"), row.getString("endpoint"),
				row.getObject("request_id", UUID.class), row.getString("test_id"),
				row.getTimestamp("time").toInstant());
	}

}
