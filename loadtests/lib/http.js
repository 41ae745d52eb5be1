// One way to make a request in every Elves script: the bearer token of this iteration's
// user, the test id header, the `endpoint` tag, a per-request timeout, the statuses that
// count as success, and (when asked) retries of failures that are safe to repeat.
import http from 'k6/http';
import exec from 'k6/execution';
import { sleep } from 'k6';
import { Counter } from 'k6/metrics';
import { config } from './config.js';

export const TEST_ID_HEADER = 'X-Elves-Test-Id';
// The registry's credentials (the gateway needs none): a run credential (ELVES_RUN_CREDENTIAL,
// what the engine gives its runners) or, for runs by hand, the service key (ELVES_SERVICE_KEY).
export const RUN_CREDENTIAL_HEADER = 'X-Elves-Run-Credential';
export const SERVICE_KEY_HEADER = 'X-Elves-Service-Key';

// The header that lets a call into the registry: the run credential when there is one.
export function registryHeaders() {
  if (config.runCredential) return { [RUN_CREDENTIAL_HEADER]: config.runCredential };
  if (config.serviceKey) return { [SERVICE_KEY_HEADER]: config.serviceKey };
  return {};
}

// Attempts beyond the first, per endpoint: how often the client had to insist.
const retries = new Counter('elves_retries');

// k6 error codes of requests that never reached the server's application code:
// dial timeout, connection refused (no replica listening), reset while connecting.
const NOT_DELIVERED = new Set([1210, 1211, 1212, 1213]);
// Answers that say "not now" without having done anything.
const NOT_NOW = new Set([429, 502, 503]);

// Whether repeating the request cannot do anything twice. A read is always safe to
// repeat after any transport failure or 504; a POST only when it demonstrably did not
// land (a timeout or a 504 may come after the gateway accepted it).
function retryable(method, res) {
  if (NOT_NOW.has(res.status) || NOT_DELIVERED.has(res.error_code)) return true;
  return method === 'GET' && (res.status === 0 || res.status === 504);
}

// The user of this iteration: iterations rotate over the tokens, so every user is used
// evenly whatever the number of VUs. Outside a scenario (setup) the caller picks.
export function currentUser() {
  const n = config.tokens.length;
  if (n === 0) return { index: 0, token: '', id: 'anonymous' };
  let iteration = 0;
  try {
    iteration = exec.scenario.iterationInTest;
  } catch (e) {
    iteration = 0; // setup/teardown have no scenario
  }
  const index = iteration % n;
  return { index, token: config.tokens[index], id: config.userIds[index] };
}

export function userAt(index) {
  const n = config.tokens.length;
  if (n === 0) return { index: 0, token: '', id: 'anonymous' };
  const i = index % n;
  return { index: i, token: config.tokens[i], id: config.userIds[i] };
}

// call({endpoint, method, url, name, body, token, expected, timeout, attempts, binary})
//   endpoint  the Elves endpoint name (k6 tag `endpoint`), e.g. getStatus
//   name      the path template (k6 tag `name`), e.g. /api/v1/status/{id}
//   expected  statuses that are not failures, default 2xx; e.g. [200, 404]
//   attempts  tries in all for retryable failures, default 1
//   headers   more headers (the registry's calls: registryHeaders())
export function call(req) {
  const method = req.method || 'GET';
  const headers = { Accept: req.binary ? 'image/png' : 'application/json' };
  const token = req.token === undefined ? currentUser().token : req.token;
  if (token) headers.Authorization = `Bearer ${token}`;
  if (config.testId) headers[TEST_ID_HEADER] = config.testId;
  Object.assign(headers, req.headers || {});
  let body = null;
  if (req.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = typeof req.body === 'string' ? req.body : JSON.stringify(req.body);
  }
  const expected = req.expected || [{ min: 200, max: 299 }];
  const params = {
    headers,
    timeout: req.timeout || config.timeout,
    tags: { endpoint: req.endpoint, name: req.name || req.url },
    responseCallback: http.expectedStatuses(...expected),
    responseType: req.binary ? 'binary' : 'text',
  };
  const attempts = Math.max(1, req.attempts || 1);
  let res;
  for (let attempt = 1; attempt <= attempts; attempt += 1) {
    res = http.request(method, req.url, body, params);
    if (attempt === attempts || !retryable(method, res)) break;
    retries.add(1, { endpoint: req.endpoint });
    sleep(0.2 * 2 ** (attempt - 1)); // 0.2 s, 0.4 s: back off a little, not for long
  }
  return res;
}

// The JSON body of a response, or null when it has none or is not JSON.
export function jsonOf(res) {
  if (!res || typeof res.body !== 'string' || res.body === '') return null;
  try {
    return JSON.parse(res.body);
  } catch (e) {
    return null;
  }
}
