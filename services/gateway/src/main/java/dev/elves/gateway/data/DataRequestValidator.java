package dev.elves.gateway.data;

import java.time.Clock;
import java.time.LocalDate;
import java.time.LocalTime;
import java.time.format.DateTimeParseException;
import java.util.Set;

import dev.elves.contracts.DataRequest;
import dev.elves.web.InvalidInputException;

import org.springframework.stereotype.Component;

import tools.jackson.databind.JsonNode;

/**
 * Turns a getData body into a {@link DataRequest}, or names the first field that is wrong.
 * The body is read as a JSON tree so that every mistake (wrong type, unknown field, huge
 * string) gets a message of ours instead of a parser's.
 */
@Component
class DataRequestValidator {

	/** The first day NEXRAD Level II data exists for. */
	static final LocalDate FIRST_DAY = LocalDate.of(1991, 6, 1);

	private static final Set<String> FIELDS = Set.of("radar", "date", "start", "end");

	private static final int MAX_DATE_LENGTH = "2024-05-20".length();

	private static final int MAX_TIME_LENGTH = "10:00:00".length();

	private final Clock clock;

	DataRequestValidator(Clock clock) {
		this.clock = clock;
	}

	DataRequest validate(JsonNode body) {
		if (body == null || !body.isObject()) {
			throw new InvalidInputException("body", "body: expected a JSON object with radar, date, start and end");
		}
		for (String name : body.propertyNames()) {
			if (!FIELDS.contains(name)) {
				throw new InvalidInputException(printable(name), printable(name)
						+ ": unknown field (expected radar, date, start, end)");
			}
		}
		String radar = text(body, "radar", RadarStations.ID_LENGTH);
		if (!RadarStations.ALL.contains(radar)) {
			throw new InvalidInputException("radar", "radar: unknown station '" + radar
					+ "' (a NEXRAD site id such as KTLX, KIND or KFWS)");
		}
		LocalDate date = date(text(body, "date", MAX_DATE_LENGTH));
		LocalTime start = time(body, "start");
		LocalTime end = time(body, "end");
		if (!end.isAfter(start)) {
			throw new InvalidInputException("end", "end: must be after start (" + start + ")");
		}
		return new DataRequest(radar, date, start, end);
	}

	private LocalDate date(String text) {
		LocalDate date;
		try {
			date = LocalDate.parse(text);
		}
		catch (DateTimeParseException ex) {
			throw new InvalidInputException("date", "date: '" + text + "' is not a date like 2024-05-20");
		}
		LocalDate today = LocalDate.now(this.clock);
		if (date.isBefore(FIRST_DAY) || date.isAfter(today)) {
			throw new InvalidInputException("date", "date: must be between " + FIRST_DAY + " and today (" + today + ")");
		}
		return date;
	}

	private static LocalTime time(JsonNode body, String field) {
		String text = text(body, field, MAX_TIME_LENGTH);
		try {
			return LocalTime.parse(text);
		}
		catch (DateTimeParseException ex) {
			throw new InvalidInputException(field, field + ": '" + text + "' is not a time like 10:00 (UTC)");
		}
	}

	private static String text(JsonNode body, String field, int maxLength) {
		JsonNode value = body.get(field);
		if (value == null || value.isNull()) {
			throw new InvalidInputException(field, field + ": required");
		}
		if (!value.isString()) {
			throw new InvalidInputException(field, field + ": must be a string");
		}
		String text = value.stringValue();
		if (text.length() > maxLength) {
			throw new InvalidInputException(field, field + ": too long (" + text.length() + " characters, at most "
					+ maxLength + ")");
		}
		return text;
	}

	/** Field names come from the caller: never echo a huge or odd one back. */
	private static String printable(String name) {
		String cut = (name.length() > 40) ? name.substring(0, 40) + "..." : name;
		return cut.replaceAll("[^\\x20-\\x7e]", "?");
	}

}
