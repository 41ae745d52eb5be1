package dev.elves.gateway.web;

import java.security.Principal;

import dev.elves.contracts.ElvesHeaders;
import dev.elves.gateway.security.Caller;
import dev.elves.web.TestIds;

import org.springframework.core.MethodParameter;
import org.springframework.security.core.Authentication;
import org.springframework.web.bind.support.WebDataBinderFactory;
import org.springframework.web.context.request.NativeWebRequest;
import org.springframework.web.method.support.HandlerMethodArgumentResolver;
import org.springframework.web.method.support.ModelAndViewContainer;

/** Builds the {@link Call} of a request once, so no controller repeats the token and header plumbing. */
class CallArgumentResolver implements HandlerMethodArgumentResolver {

	@Override
	public boolean supportsParameter(MethodParameter parameter) {
		return parameter.getParameterType() == Call.class;
	}

	@Override
	public Call resolveArgument(MethodParameter parameter, ModelAndViewContainer container, NativeWebRequest request,
			WebDataBinderFactory binders) {
		Principal principal = request.getUserPrincipal();
		if (!(principal instanceof Authentication authentication)) {
			// The security chain lets no unauthenticated request reach an API controller.
			throw new IllegalStateException("an API call reached " + parameter.getExecutable() + " without a token");
		}
		String header = TestIds.check(request.getHeader(ElvesHeaders.TEST_ID));
		return new Call(Caller.of(authentication), testId(Caller.testIdOf(authentication), header));
	}

	/**
	 * A run's token is good for its own test only: its calls carry its test id (the header may
	 * repeat it or be left out), so a token that leaks from a runner cannot write into another
	 * test's ledger. A person's token (no test id) takes the header as it comes.
	 */
	static String testId(String bound, String header) {
		if (bound == null || header == null || bound.equals(header)) {
			return (bound != null) ? bound : header;
		}
		throw new TestIdNotInTokenException(bound);
	}

}
