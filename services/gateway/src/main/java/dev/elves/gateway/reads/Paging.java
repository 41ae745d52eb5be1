package dev.elves.gateway.reads;

import java.util.Map;

import dev.elves.gateway.web.InvalidInputException;

/** Checks page/size query parameters of the paged reads. */
record Paging(int page, int size) {

	static final int MAX_SIZE = 500;

	Paging {
		if (page < 0) {
			throw new InvalidInputException("page", "page: must be 0 or more");
		}
		if (size < 1 || size > MAX_SIZE) {
			throw new InvalidInputException("size", "size: must be between 1 and " + MAX_SIZE);
		}
	}

	Map<String, Object> query() {
		return Map.of("page", this.page, "size", this.size);
	}

}
