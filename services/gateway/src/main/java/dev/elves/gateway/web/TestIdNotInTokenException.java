package dev.elves.gateway.web;

import dev.elves.contracts.ElvesHeaders;

/** A run's token sent with another test's id ({@link CallArgumentResolver#testId}): 403, naming the header. */
class TestIdNotInTokenException extends RuntimeException {

	TestIdNotInTokenException(String bound) {
		super(ElvesHeaders.TEST_ID + ": this token is for test " + bound + " only; send that id, or none");
	}

}
