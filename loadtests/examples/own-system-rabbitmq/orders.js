// The load of loadtests/examples/own-system-rabbitmq/orders.yaml: each iteration publishes one
// order to the exchange the worker's queue is bound to, through Elves' publisher
// (python -m elves.rabbitmq.publish), which answers once the broker has confirmed the message
// routed to a queue. k6 stays unmodified: Elves plans the scenarios (rate, stages, duration) and
// passes them in ELVES_K6_SCENARIOS, as for HTTP load. The endpoint tag names the publish in the
// SystemUnderTest's ledger (accepted: {endpoint: publishOrder}).
import http from 'k6/http';
import { check } from 'k6';

// k6 archive (k6-operator's initializer) reads no environment: one iteration stands in there.
const ONE_ITERATION = { publishOrder: { executor: 'shared-iterations', exec: 'publishOrder', iterations: 1 } };
export const options = {
  scenarios: __ENV.ELVES_K6_SCENARIOS ? JSON.parse(__ENV.ELVES_K6_SCENARIOS) : ONE_ITERATION,
};

// The publisher in front of the broker, and where the worker's queue is bound.
const publisher = __ENV.RABBITMQ_PUBLISH_URL || 'http://elves-rabbitmq-publish.shop.svc:8093';
const exchange = __ENV.RABBITMQ_EXCHANGE || 'orders';
const routingKey = __ENV.RABBITMQ_ROUTING_KEY || 'placed';

export function publishOrder() {
  const order = { item: `item-${Math.floor(Math.random() * 100)}`, quantity: 1 + Math.floor(Math.random() * 3) };
  const url = `${publisher}/exchanges/${encodeURIComponent(exchange)}/${encodeURIComponent(routingKey)}`;
  const res = http.post(url, JSON.stringify(order), {
    // The SystemUnderTest's testIdHeader: the publisher puts it on the message as a header.
    headers: { 'Content-Type': 'application/json', 'X-Test-Id': __ENV.ELVES_TEST_ID },
    tags: { endpoint: 'publishOrder' },
  });
  check(res, { confirmed: (r) => r.status === 200 });
}
