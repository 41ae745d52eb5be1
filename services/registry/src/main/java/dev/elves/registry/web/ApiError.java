package dev.elves.registry.web;

import com.fasterxml.jackson.annotation.JsonInclude;

/** The body of every error answer: what is wrong and, for bad input, which field. */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record ApiError(String error, String field) {
}
