// The load of loadtests/examples/own-system/orders.yaml: each iteration places one order.
// Elves plans the scenarios (rate, duration, mix) and passes them in ELVES_K6_SCENARIOS; each
// mix key names the exported function that runs it. The endpoint tag names the request in
// Elves' results and in the SystemUnderTest's ledger (accepted: {endpoint: placeOrder}).
import http from 'k6/http';
import { check } from 'k6';

// On a cluster, k6-operator's initializer packs and inspects the script first (k6 archive, k6
// inspect), and `k6 archive` reads no environment: there ELVES_K6_SCENARIOS is absent, so the
// script must load without it (one iteration stands in; the runners get the real scenarios).
const ONE_ITERATION = { placeOrder: { executor: 'shared-iterations', exec: 'placeOrder', iterations: 1 } };
export const options = {
  scenarios: __ENV.ELVES_K6_SCENARIOS ? JSON.parse(__ENV.ELVES_K6_SCENARIOS) : ONE_ITERATION,
};

// The orders API inside the cluster (a runner's Secret can set it: spec.runner.envFromSecrets).
const api = __ENV.ORDERS_URL || 'http://orders-api.shop.svc:8080';

export function placeOrder() {
  const order = { item: `item-${Math.floor(Math.random() * 100)}`, quantity: 1 + Math.floor(Math.random() * 3) };
  const res = http.post(`${api}/orders`, JSON.stringify(order), {
    headers: { 'Content-Type': 'application/json', 'X-Test-Id': __ENV.ELVES_TEST_ID },
    tags: { endpoint: 'placeOrder' },
  });
  check(res, { accepted: (r) => r.status === 202 });
}
