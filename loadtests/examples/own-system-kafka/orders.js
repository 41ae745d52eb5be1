// The load of loadtests/examples/own-system-kafka/orders.yaml: each iteration publishes one order
// to the topic the worker consumes, through Elves' publisher (python -m elves.kafka.publish),
// which answers once the broker has confirmed the record. k6 stays unmodified: Elves plans the
// scenarios (rate, stages, duration) and passes them in ELVES_K6_SCENARIOS, as for HTTP load.
// The endpoint tag names the publish in the SystemUnderTest's ledger (accepted: {endpoint: publishOrder}).
import http from 'k6/http';
import { check } from 'k6';

// k6 archive (k6-operator's initializer) reads no environment: one iteration stands in there.
const ONE_ITERATION = { publishOrder: { executor: 'shared-iterations', exec: 'publishOrder', iterations: 1 } };
export const options = {
  scenarios: __ENV.ELVES_K6_SCENARIOS ? JSON.parse(__ENV.ELVES_K6_SCENARIOS) : ONE_ITERATION,
};

// The publisher in front of the broker, and the topic the worker consumes.
const publisher = __ENV.KAFKA_PUBLISH_URL || 'http://elves-kafka-publish.shop.svc:8092';
const topic = __ENV.KAFKA_TOPIC || 'orders.placed';

export function publishOrder() {
  const order = { item: `item-${Math.floor(Math.random() * 100)}`, quantity: 1 + Math.floor(Math.random() * 3) };
  const res = http.post(`${publisher}/topics/${topic}`, JSON.stringify(order), {
    // The SystemUnderTest's testIdHeader: the publisher puts it on the record as a header.
    headers: { 'Content-Type': 'application/json', 'X-Test-Id': __ENV.ELVES_TEST_ID },
    tags: { endpoint: 'publishOrder' },
  });
  check(res, { confirmed: (r) => r.status === 200 });
}
