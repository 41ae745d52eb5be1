package dev.elves.web;

import com.fasterxml.jackson.annotation.JsonInclude;

/**
 * The body of every error answer.
 *
 * @param error what is wrong, in words a caller can act on
 * @param field the request field, parameter or header at fault, if one is
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record ApiError(String error, String field) {
}
