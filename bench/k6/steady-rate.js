// One endpoint at one constant arrival rate (open model), for bench/services.sh,
// bench/local-proxy.sh and bench/registry-reads.sh. ELVES_BENCH_TARGET: getData or getUser
// (gateway), addAppLog (registry), or one of the registry's read calls that the gateway makes
// (registryReads below: ELVES_BENCH_USER, ELVES_BENCH_REQUEST); ELVES_BENCH_RATE per second;
// ELVES_BENCH_DURATION (k6 duration); ELVES_BENCH_URL; ELVES_BENCH_TOKEN for the gateway;
// ELVES_SERVICE_KEY for the registry.
import http from 'k6/http';
import { check } from 'k6';
import { Counter } from 'k6/metrics';

// Each failed answer counted by its status (0: no answer: a reset connection or the 10 s
// timeout), so a bench can say why requests failed, not only how many.
const FAILURE_STATUSES = [0, 400, 401, 404, 429, 500, 502, 503, 504];
const failures = Object.fromEntries(FAILURE_STATUSES.map((s) => [s, new Counter(`failed_status_${s}`)]));
const otherFailures = new Counter('failed_status_other');

function countFailure(res, expected) {
  if (res.status !== expected) (failures[res.status] || otherFailures).add(1);
}

const target = __ENV.ELVES_BENCH_TARGET || 'getData';
const rate = Number(__ENV.ELVES_BENCH_RATE || '50');
const url = __ENV.ELVES_BENCH_URL || 'http://127.0.0.1:8080';
const testId = __ENV.ELVES_BENCH_TEST_ID || `bench/${target}/${rate}`;
const serviceKey = { 'X-Elves-Service-Key': __ENV.ELVES_SERVICE_KEY || '' };

// The registry's reads behind getUser, getStatus, getHistory and getAllHistory: one row, one
// row, 20 rows, a page of 100 rows (101 read).
const user = encodeURIComponent(__ENV.ELVES_BENCH_USER || 'bench-reads');
const registryReads = {
  registryUser: `/api/v1/users/${user}`,
  registryStatus: `/api/v1/requests/${__ENV.ELVES_BENCH_REQUEST}?user=${user}`,
  registryHistory: `/api/v1/logs?user=${user}&limit=20`,
  registryAllHistory: `/api/v1/logs?user=${user}&all=true&page=0&size=100`,
};

export const options = {
  discardResponseBodies: true,
  scenarios: {
    steady: {
      executor: 'constant-arrival-rate',
      rate,
      timeUnit: '1s',
      duration: __ENV.ELVES_BENCH_DURATION || '20s',
      // Enough VUs for answers within 500 ms from the start (starting VUs during the step makes
      // k6 drop iterations), 2 s at most; k6 drops iterations beyond that and the bench counts
      // them as failures.
      preAllocatedVUs: Math.max(20, Math.ceil(rate / 2)),
      maxVUs: Math.max(50, rate * 2),
    },
  },
};

const radars = ['KTLX', 'KIND', 'KFWS', 'KAMX', 'KOKX', 'KLOT'];

function pad(n) {
  return String(n).padStart(2, '0');
}

export default function () {
  let res;
  if (registryReads[target]) {
    res = http.get(url + registryReads[target], { headers: serviceKey, timeout: '10s' });
    check(res, { answered: (r) => r.status === 200 });
    countFailure(res, 200);
  } else if (target === 'getData') {
    const hour = Math.floor(Math.random() * 23);
    const body = JSON.stringify({
      radar: radars[Math.floor(Math.random() * radars.length)],
      date: `2021-${pad(1 + Math.floor(Math.random() * 12))}-${pad(1 + Math.floor(Math.random() * 28))}`,
      start: `${pad(hour)}:00`,
      end: `${pad(hour + 1)}:00`,
    });
    res = http.post(`${url}/api/v1/data`, body, {
      headers: {
        'Content-Type': 'application/json',
        Authorization: `Bearer ${__ENV.ELVES_BENCH_TOKEN}`,
        'X-Elves-Test-Id': testId,
      },
      timeout: '10s',
    });
    check(res, { accepted: (r) => r.status === 202 });
    countFailure(res, 202);
  } else if (target === 'getUser') {
    res = http.get(`${url}/api/v1/users/me`, {
      headers: { Authorization: `Bearer ${__ENV.ELVES_BENCH_TOKEN}`, 'X-Elves-Test-Id': testId },
      timeout: '10s',
    });
    check(res, { answered: (r) => r.status === 200 });
    countFailure(res, 200);
  } else {
    const body = JSON.stringify({ userId: `bench-${Math.floor(Math.random() * 500)}` });
    res = http.post(`${url}/api/v1/logs`, body, {
      headers: { 'Content-Type': 'application/json', 'X-Elves-Test-Id': testId, ...serviceKey },
      timeout: '10s',
    });
    check(res, { stored: (r) => r.status === 201 });
    countFailure(res, 201);
  }
}
