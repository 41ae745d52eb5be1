package dev.elves.web;

import java.util.Map;

/**
 * The {@code page} and {@code size} query parameters of a paged read, checked. Pages reach only
 * the first {@link #MAX_ROWS} rows: the database reads and throws away every row before the
 * offset, so a deep page costs as much as reading all of them, and one caller asking for page
 * 2,000,000 could hold a connection and a core for as long as that takes.
 */
public record Paging(int page, int size) {

	public static final int MAX_SIZE = 500;

	/** How deep pages reach: a page must begin within the first this many rows. */
	public static final int MAX_ROWS = 10_000;

	public Paging {
		if (page < 0) {
			throw new InvalidInputException("page", "page: must be 0 or more");
		}
		if (size < 1 || size > MAX_SIZE) {
			throw new InvalidInputException("size", "size: must be between 1 and " + MAX_SIZE);
		}
		if ((long) page * size >= MAX_ROWS) {
			throw new InvalidInputException("page", "page: pages reach only the first " + MAX_ROWS
					+ " rows; with size " + size + " the last page is " + ((MAX_ROWS - 1) / size));
		}
	}

	public long offset() {
		return (long) this.page * this.size;
	}

	/** As query parameters, for passing the page on. */
	public Map<String, Object> query() {
		return Map.of("page", this.page, "size", this.size);
	}

}
