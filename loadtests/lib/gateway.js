// The gateway's public API (DESIGN.md), one function per endpoint, each tagged with its
// Elves endpoint name; plus the plot round trip and the seed pool the reads use.
import { check, sleep } from 'k6';
import { Trend } from 'k6/metrics';
import { config } from './config.js';
import { call, currentUser, jsonOf, userAt } from './http.js';
import { dataRequest } from './data.js';
import { requireTarget } from './target.js';

const API = `${config.baseUrl}/api/v1`;
const TERMINAL = new Set(['DONE', 'FAILED']);
const NOT_YET_IS_FINE = [{ min: 200, max: 299 }, 404];
const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

// From 202 to a terminal status, as the client saw it (k6_elves_plot_duration_seconds).
const plotDuration = new Trend('elves_plot_duration', true);

// opts: {user, expected, timeout, attempts}; user defaults to this iteration's user.
function as(opts) {
  const user = (opts && opts.user) || currentUser();
  return {
    token: user.token,
    expected: opts && opts.expected,
    timeout: opts && opts.timeout,
    attempts: opts && opts.attempts,
  };
}

// POST /api/v1/data -> the request id, or null when it was not accepted.
export function postData(opts) {
  const res = call({
    ...as(opts), endpoint: 'getData', method: 'POST', url: `${API}/data`, name: '/api/v1/data',
    body: dataRequest(),
  });
  const body = jsonOf(res);
  const id = body && body.id;
  check(res, { 'getData accepted with an id': (r) => r.status === 202 && !!id });
  return res.status === 202 && id ? String(id) : null;
}

// The status word of an answer: {"status": "DONE", ...} or a bare DONE.
function statusWord(res) {
  const body = jsonOf(res);
  if (body && typeof body === 'object') return String(body.status || body.state || '');
  if (typeof body === 'string') return body;
  return typeof res.body === 'string' ? res.body.trim() : '';
}

// GET /api/v1/status/{id} -> {res, status}.
export function getStatus(id, opts) {
  const res = call({
    ...as(opts), endpoint: 'getStatus', url: `${API}/status/${id}`, name: '/api/v1/status/{id}',
  });
  return { res, status: res.status === 200 ? statusWord(res) : '' };
}

export function isPng(res) {
  if (!res || res.status !== 200 || !res.body || typeof res.body === 'string') return false;
  const bytes = new Uint8Array(res.body);
  return bytes.length > PNG_SIGNATURE.length && PNG_SIGNATURE.every((b, i) => bytes[i] === b);
}

// GET /api/v1/plots/{id}; checks the PNG signature when the answer is 200.
export function getImage(id, opts) {
  const res = call({
    ...as(opts), endpoint: 'getImage', url: `${API}/plots/${id}`, name: '/api/v1/plots/{id}',
    binary: true,
  });
  if (res.status === 200) check(res, { 'getImage is a PNG': isPng });
  return res;
}

export function getHistory(opts) {
  return call({ ...as(opts), endpoint: 'getHistory', url: `${API}/history`, name: '/api/v1/history' });
}

export function getAllHistory(opts) {
  return call({
    ...as(opts), endpoint: 'getAllHistory', url: `${API}/history?all=true`, name: '/api/v1/history?all=true',
  });
}

export function getUser(opts) {
  return call({ ...as(opts), endpoint: 'getUser', url: `${API}/users/me`, name: '/api/v1/users/me' });
}

// Admin only: with ELVES_ADMIN_TOKEN, or the iteration's user when none is set.
export function getAllUsers(opts) {
  const token = config.adminToken || as(opts).token;
  return call({ ...as(opts), token, endpoint: 'getAllUsers', url: `${API}/users`, name: '/api/v1/users' });
}

// Poll the status until DONE/FAILED or the deadline; returns the last status word
// ('LATE' past the deadline). A 404 while polling is the gateway's "not known yet" (the
// registry records a request from the queue, a moment after the 202): expected, not a
// failure, and polled again.
export function waitForPlot(id, acceptedAt, opts) {
  const deadline = acceptedAt + config.plotDeadlineSeconds * 1000;
  const poll = { ...opts, expected: NOT_YET_IS_FINE };
  for (;;) {
    sleep(config.pollIntervalSeconds);
    const { status } = getStatus(id, poll);
    if (TERMINAL.has(status)) {
      plotDuration.add(Date.now() - acceptedAt, { status });
      return status;
    }
    if (Date.now() + config.pollIntervalSeconds * 1000 > deadline) {
      plotDuration.add(Date.now() - acceptedAt, { status: 'LATE' });
      return 'LATE';
    }
  }
}

// getData, then getStatus until DONE/FAILED, then getImage: the whole asynchronous trip.
// Returns {id, status, image} (image: whether a PNG came back).
export function plotRoundTrip(opts) {
  const id = postData(opts);
  if (!id) return { id: null, status: '', image: false };
  const status = waitForPlot(id, Date.now(), opts);
  check(status, { 'plot finished before the deadline': (s) => s !== 'LATE' });
  const image = status === 'DONE' ? isPng(getImage(id, opts)) : false;
  return { id, status, image };
}

// Seed requests made in setup() for the scenarios that read a request's status or plot:
// k6 VUs share no memory, so reads need ids known before the load starts. One per user
// (at most `count`), each read later with its owner's token. They are polled together
// until each is DONE (waitDone: getImage needs a plot) or at least known to the registry
// (so the first getStatus of the load does not meet a 404), within ELVES_PLOT_DEADLINE.
export function seedPool(count, waitDone) {
  const users = Math.max(1, Math.min(count, config.tokens.length || 1));
  let waiting = [];
  for (let i = 0; i < users; i += 1) {
    const id = postData({ user: userAt(i) });
    if (id) waiting.push({ id, user: i });
  }
  if (waiting.length === 0) {
    throw new Error(`no seed data request was accepted by ${API}/data; see the getData errors above`);
  }
  const ready = [];
  const deadline = Date.now() + config.plotDeadlineSeconds * 1000;
  while (waiting.length > 0 && Date.now() < deadline) {
    sleep(config.pollIntervalSeconds);
    waiting = waiting.filter((seed) => {
      const { status } = getStatus(seed.id, { user: userAt(seed.user), expected: NOT_YET_IS_FINE });
      const isReady = waitDone ? status === 'DONE' : status !== '';
      if (isReady) ready.push(seed);
      return !isReady && status !== 'FAILED';
    });
  }
  if (ready.length === 0) {
    throw new Error(`none of the seed requests was ${waitDone ? 'DONE' : 'known to the registry'} within`
      + ` ELVES_PLOT_DEADLINE (${config.plotDeadlineSeconds}s): ${waitDone ? 'is an ingestor' : 'is the registry'} running?`);
  }
  return ready;
}

// A pool entry for this iteration and the user who owns it.
export function fromPool(pool) {
  const entry = pool[Math.floor(Math.random() * pool.length)];
  return { id: entry.id, user: userAt(entry.user) };
}

// setup() of the scripts that talk to the gateway: fail fast when it is not there, then
// seed the pool when the planned execs read requests (`planned`: plannedExecs()); the
// seeds must be finished plots when getImage or `waitFor` is planned.
export function gatewaySetup(planned, poolSize, waitFor = 'getImage') {
  requireTarget('the gateway', 'getUser', `${API}/users/me`, userAt(0).token, 'ELVES_BASE_URL');
  const needsPool = planned.has('getStatus') || planned.has('getImage');
  const waitDone = planned.has('getImage') || planned.has(waitFor);
  return { pool: needsPool ? seedPool(poolSize, waitDone) : [] };
}

// Exec functions for reads of seeded requests (setup data: {pool}); scripts re-export them.
export function getStatusOfSeed(data) {
  const { id, user } = fromPool(data.pool);
  getStatus(id, { user });
}

export function getImageOfSeed(data) {
  const { id, user } = fromPool(data.pool);
  getImage(id, { user });
}
