// Settings every Elves script reads from the environment (`k6 run -e KEY=value` or the
// process environment), each with a default that works against the local mode.
// The engine sets ELVES_BASE_URL, ELVES_TOKENS, ELVES_ADMIN_TOKEN, ELVES_TEST_ID and
// ELVES_K6_SCENARIOS (docs/architecture.md); the rest are knobs for people.
import encoding from 'k6/encoding';
import { FACTS } from './scenario-facts.js';

function env(name, fallback) {
  const value = __ENV[name];
  return value === undefined || value === '' ? fallback : value;
}

function trimSlash(url) {
  return url.replace(/\/+$/, '');
}

// "10s", "1.5s", "500ms", "2m" -> seconds; anything else is a mistake worth naming.
export function parseSeconds(name, text) {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m)$/.exec(String(text).trim());
  if (!match) {
    throw new Error(`${name}=${JSON.stringify(text)} is not a duration like 500ms, 10s or 2m`);
  }
  const factor = { ms: 0.001, s: 1, m: 60 }[match[2]];
  return Number(match[1]) * factor;
}

function positiveNumber(name, fallback) {
  const text = env(name, String(fallback));
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) {
    throw new Error(`${name}=${JSON.stringify(text)} must be a positive number`);
  }
  return value;
}

function list(name, fallback) {
  return env(name, fallback).split(',').map((s) => s.trim()).filter((s) => s !== '');
}

// The JWT's `sub` is the user id (the registry is addressed by user id, not by token).
// A token that is not a JWT (a test double's opaque token) falls back to its position.
export function userIdOf(token, index) {
  const parts = token.split('.');
  if (parts.length === 3) {
    try {
      const claims = JSON.parse(encoding.b64decode(parts[1], 'rawurl', 's'));
      if (claims && typeof claims.sub === 'string' && claims.sub !== '') {
        return claims.sub;
      }
    } catch (e) {
      // not a JWT after all: use the fallback below
    }
  }
  return `user-${index + 1}`;
}

const tokens = list('ELVES_TOKENS', '');

export const config = Object.freeze({
  baseUrl: trimSlash(env('ELVES_BASE_URL', 'http://127.0.0.1:8080')),
  registryUrl: trimSlash(env('ELVES_REGISTRY_URL', 'http://127.0.0.1:8081')),
  // The registry's service credential, for the scenarios that call it directly.
  serviceKey: env('ELVES_SERVICE_KEY', ''),
  // One bearer token per synthetic user. Without any, requests go out unauthenticated
  // and setup() says so when the gateway answers 401.
  tokens: Object.freeze(tokens),
  userIds: Object.freeze(tokens.map(userIdOf)),
  adminToken: env('ELVES_ADMIN_TOKEN', ''),
  testId: env('ELVES_TEST_ID', ''),
  // Per-request timeout (k6's default of 60 s would hide a stalled system behind slow VUs).
  timeout: env('ELVES_TIMEOUT', '10s'),
  // How long one data request may take from 202 to DONE/FAILED before it counts as late.
  plotDeadlineSeconds: parseSeconds('ELVES_PLOT_DEADLINE', env('ELVES_PLOT_DEADLINE', '60s')),
  // The engine sizes the ingestor scenario's VUs from the default (scenario-facts.js).
  pollIntervalSeconds: parseSeconds('ELVES_POLL_INTERVAL', env('ELVES_POLL_INTERVAL', `${FACTS.pollIntervalSeconds}s`)),
  // Pause between the steps of a journey (a person reading the page).
  thinkSeconds: parseSeconds('ELVES_THINK_TIME', env('ELVES_THINK_TIME', '1s')),
  // Radars the synthetic data requests name; must be radars the gateway accepts.
  radars: Object.freeze(list('ELVES_RADARS', 'KIND,KLOT,KTLX,KFWS,KAMX')),
  // The original registry's getAppLog returned all of a user's logs (the cause of its
  // memory growth); set true to reproduce that instead of the latest page.
  appLogAll: env('ELVES_APPLOG_ALL', 'false') === 'true',
  // Standalone runs (no ELVES_K6_SCENARIOS) default to this total rate and duration.
  defaultRatePerMinute: positiveNumber('ELVES_RATE_PER_MIN', 60),
  defaultDuration: env('ELVES_DURATION', '30s'),
  scenariosJson: env('ELVES_K6_SCENARIOS', ''),
  // auto: thresholds when run standalone, none under the engine (it judges from Prometheus).
  thresholds: env('ELVES_THRESHOLDS', 'auto'),
});
