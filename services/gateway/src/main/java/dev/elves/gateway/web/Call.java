package dev.elves.gateway.web;

import dev.elves.gateway.security.Caller;

/**
 * Who makes an API call and for which load test: the token's user and the checked
 * {@code X-Elves-Test-Id} header (null without one). A controller method that declares a
 * {@code Call} parameter gets it from {@link CallArgumentResolver}.
 */
public record Call(Caller caller, String testId) {

	public String userId() {
		return this.caller.userId();
	}

}
