// Fail fast, with a message a person can act on, when the system under test is not there.
// exec.test.abort() ends the run at once with k6's exit code 108 (script aborted), so the
// engine reports a harness error instead of a test full of connection errors.
import http from 'k6/http';
import exec from 'k6/execution';
import { config } from './config.js';
import { TEST_ID_HEADER } from './http.js';

function abort(message) {
  console.error(message);
  exec.test.abort(message);
}

// GET `url` with `token` and insist on a 2xx. `what` names the target in the message
// ("the gateway"); `endpoint` is the Elves endpoint the probe calls: the probe is counted
// as that endpoint, because the service logs it as one (the ledger must add up).
// A target that is down refuses the connection at once; the timeout only bounds a target
// that hangs, and is long because a just-started JVM on a busy machine (the results suite
// on 2 shared cores) took over 5 s to answer its first request.
// `extraHeaders` go along too (the registry's credential: registryHeaders()).
export function requireTarget(what, endpoint, url, token, envName, extraHeaders = {}) {
  const headers = { ...extraHeaders };
  if (token) headers.Authorization = `Bearer ${token}`;
  if (config.testId) headers[TEST_ID_HEADER] = config.testId;
  const res = http.get(url, {
    headers,
    timeout: '30s',
    tags: { endpoint, name: url.replace(/^[a-z]+:\/\/[^/]+/, '') },
  });
  if (res.status === 0) {
    abort(`${what} at ${url} is not reachable (${res.error || 'no answer'});`
      + ` start it or point ${envName} at it`);
  } else if (res.status === 401 || res.status === 403) {
    abort(`${what} at ${url} answered ${res.status} to the probe: ${token ? 'the token was refused' : 'no token given'};`
      + ' set ELVES_TOKENS (and ELVES_ADMIN_TOKEN) to tokens it accepts, e.g. from `elves token --user NAME`'
      + (what === 'the registry' ? ', and ELVES_RUN_CREDENTIAL (or ELVES_SERVICE_KEY) to a credential it accepts'
        + `: it said ${res.body}` : ''));
  } else if (res.status >= 500) {
    abort(`${what} at ${url} answered ${res.status} to the probe: it is up but not healthy`);
  } else if (res.status < 200 || res.status > 299) {
    abort(`${what} at ${url} answered ${res.status} to the probe: is ${envName} pointing at the Elves ${what.replace(/^the /, '')}?`);
  }
  return res;
}
