package dev.elves.contracts;

import java.util.UUID;

/**
 * The payload of {@code activity.logged}.
 *
 * @param endpoint  the load-test name of the call (getStatus, getHistory, ...)
 * @param requestId the request the call was about, if any
 */
public record Activity(String endpoint, UUID requestId) {
}
