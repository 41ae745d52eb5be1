package dev.elves.registry.web;

import java.util.List;

import dev.elves.web.Paging;

/** One page of a paged read; {@code hasNext} is known by reading one row more than asked. */
public record Page<T>(int page, int size, boolean hasNext, List<T> items) {

	/** From {@code size + 1} rows read at {@link Paging#offset()}. */
	public static <T> Page<T> of(Paging paging, List<T> rows) {
		boolean more = rows.size() > paging.size();
		return new Page<>(paging.page(), paging.size(), more, more ? rows.subList(0, paging.size()) : rows);
	}

}
