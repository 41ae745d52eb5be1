package dev.elves.web;

import java.util.Map;

/** The {@code page} and {@code size} query parameters of a paged read, checked. */
public record Paging(int page, int size) {

	public static final int MAX_SIZE = 500;

	public Paging {
		if (page < 0) {
			throw new InvalidInputException("page", "page: must be 0 or more");
		}
		if (size < 1 || size > MAX_SIZE) {
			throw new InvalidInputException("size", "size: must be between 1 and " + MAX_SIZE);
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
