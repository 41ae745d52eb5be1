package dev.elves.registry.web;

import java.io.IOException;

import dev.elves.contracts.ElvesHeaders;
import dev.elves.web.ApiError;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import org.springframework.http.MediaType;
import org.springframework.web.method.HandlerMethod;
import org.springframework.web.servlet.HandlerInterceptor;

import tools.jackson.databind.json.JsonMapper;

/**
 * What a run credential may do, judged after routing (so on the method the request reaches, however
 * its path was spelt): only methods marked {@link RunScope} whose scope it grants, and where the
 * call names a test id, only the credential's. Anything else is 403 naming why. Calls with the
 * service key pass untouched.
 */
class RunScopeInterceptor implements HandlerInterceptor {

	static final String TEST_ID_PARAMETER = "testId";

	private final JsonMapper mapper;

	RunScopeInterceptor(JsonMapper mapper) {
		this.mapper = mapper;
	}

	@Override
	public boolean preHandle(HttpServletRequest request, HttpServletResponse response, Object handler)
			throws IOException {
		if (!(request.getAttribute(ServiceKeyFilter.RUN_CREDENTIAL) instanceof RunCredential credential)) {
			return true;
		}
		RunScope scope = (handler instanceof HandlerMethod method) ? method.getMethodAnnotation(RunScope.class) : null;
		if (scope == null) {
			return forbid(response, "a run credential may not call " + request.getMethod() + " "
					+ request.getRequestURI() + ": only the registry-mix calls and its own test's ledger", null);
		}
		if (!credential.scopes().contains(scope.value())) {
			return forbid(response, "the run credential lacks the scope " + scope.value(), ElvesHeaders.RUN_CREDENTIAL);
		}
		String named = switch (scope.testId()) {
			case NONE -> credential.testId();
			case HEADER -> request.getHeader(ElvesHeaders.TEST_ID);
			case PARAMETER -> request.getParameter(TEST_ID_PARAMETER);
		};
		if (!credential.testId().equals(named)) {
			String field = (scope.testId() == RunScope.TestIdIn.HEADER) ? ElvesHeaders.TEST_ID : TEST_ID_PARAMETER;
			return forbid(response, field + ": the run credential is for test " + credential.testId()
					+ ((named == null) ? ", and the call names none" : ", not " + named), field);
		}
		return true;
	}

	private boolean forbid(HttpServletResponse response, String error, String field) throws IOException {
		response.setStatus(HttpServletResponse.SC_FORBIDDEN);
		response.setContentType(MediaType.APPLICATION_JSON_VALUE);
		this.mapper.writeValue(response.getOutputStream(), new ApiError(error, field));
		return false;
	}

}
