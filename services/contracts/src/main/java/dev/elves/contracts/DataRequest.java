package dev.elves.contracts;

import java.time.LocalDate;
import java.time.LocalTime;

/** The payload of {@code data.requested}: which radar, which day, which time window (UTC). */
public record DataRequest(String radar, LocalDate date, LocalTime start, LocalTime end) {
}
