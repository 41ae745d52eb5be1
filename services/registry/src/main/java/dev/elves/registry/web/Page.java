package dev.elves.registry.web;

import java.util.List;

/** One page of a paged read; {@code hasNext} is known by reading one row more than asked. */
public record Page<T>(int page, int size, boolean hasNext, List<T> items) {

	public static final int MAX_SIZE = 500;

	public static void check(int page, int size) {
		if (page < 0) {
			throw new InvalidInputException("page", "page: must be 0 or more");
		}
		if (size < 1 || size > MAX_SIZE) {
			throw new InvalidInputException("size", "size: must be between 1 and " + MAX_SIZE);
		}
	}

	/** From {@code size + 1} rows read at offset {@code page * size}. */
	public static <T> Page<T> of(int page, int size, List<T> rows) {
		boolean more = rows.size() > size;
		return new Page<>(page, size, more, more ? rows.subList(0, size) : rows);
	}

}
