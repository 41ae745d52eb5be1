"""Below the gateway: a message delivered twice is stored once, and poison messages end in
the dead-letter queues without stopping the good traffic behind them."""

import uuid

import pytest

from elves.constants import DEAD_LETTER_SUFFIX, QUEUE_INGESTOR_DATA, QUEUE_REGISTRY_APPLOG
from sut_helpers import (DATA_BODY, Broker, Gateway, envelope, kill_every_replica, unique, wait_jobs_finished,
                         wait_ledger, wait_restarted)

DATA_REQUESTED = "data.requested"  # routed to the ingestor's and the registry's queue
ACTIVITY_LOGGED = QUEUE_REGISTRY_APPLOG  # routing key of activity logs: the queue's name
UNPARSEABLE = 5
INVALID = 5  # a request that ends before it starts: the ingestor can never do it
GOOD_AFTER = 5


def test_the_same_message_twice_is_stored_once(local_stack):
    user, test_id = unique("sut-twice"), unique("sut-twice")
    request_id, log_id = str(uuid.uuid4()), str(uuid.uuid4())
    request = envelope("activity.logged", user, test_id, {"endpoint": "getUser"}, log_id)
    with Broker(local_stack) as broker:
        for _ in range(2):
            broker.publish(DATA_REQUESTED, envelope("data.requested", user, test_id, DATA_BODY, request_id),
                           request_id)
            broker.publish(ACTIVITY_LOGGED, request, log_id)

    # The registry discards the second data request and the second log; the ingestor plots the
    # request twice, and the registry discards the second plot.started and plot.completed.
    final = wait_ledger(local_stack, test_id, lambda entry: entry["results"]["done"] == 1 and entry["duplicates"] >= 4,
                        120, "one result and the four copies discarded")
    assert final["requests"] == 1 and final["results"] == {"done": 1, "failed": 0}, final
    assert final["logs"] == 2 and final["logsByEndpoint"] == {"getData": 1, "getUser": 1}, final
    assert final["duplicates"] == 4, final


@pytest.fixture
def unstick_unless_passed(exclusive_stack):
    """A consumer stuck on a poison message would stall every later test. When this test
    fails, the ingestor is killed (its unsettled messages return to the queue) and the
    test's unparseable messages are moved to the dead-letter queue by hand."""
    poison: set[bytes] = set()
    yield poison
    if poison:
        killed = kill_every_replica(exclusive_stack, "ingestor")
        with Broker(exclusive_stack) as broker:
            exclusive_stack.wait_for(lambda: broker.consumers(QUEUE_INGESTOR_DATA) == 0, "the killed ingestor's consumers to be gone",
                                     30)
            broker.park(QUEUE_INGESTOR_DATA, poison)
        wait_restarted(exclusive_stack, "ingestor", killed)


def test_poison_messages_end_in_the_dead_letter_queues_and_good_traffic_flows(exclusive_stack,
                                                                               unstick_unless_passed):
    stack = exclusive_stack
    user, test_id = unique("sut-poison"), unique("sut-poison")
    ingestor_dlq, applog_dlq = QUEUE_INGESTOR_DATA + DEAD_LETTER_SUFFIX, QUEUE_REGISTRY_APPLOG + DEAD_LETTER_SUFFIX
    backwards = {**DATA_BODY, "start": "11:30", "end": "10:00"}
    with Broker(stack) as broker:
        before = {queue: broker.depth(queue) for queue in (ingestor_dlq, applog_dlq)}
        unparseable = {b'{"id": "not json ' + uuid.uuid4().hex.encode() for _ in range(UNPARSEABLE)}
        unstick_unless_passed |= unparseable
        for body in unparseable:
            broker.publish(DATA_REQUESTED, body)
        for _ in range(INVALID):
            broker.publish(DATA_REQUESTED, envelope("data.requested", user, test_id, backwards))

        # Both consumers reject what they cannot read; the registry keeps the backwards requests
        # (they were made), and the ingestor reports them FAILED before parking them.
        expected = {ingestor_dlq: before[ingestor_dlq] + UNPARSEABLE + INVALID,
                    applog_dlq: before[applog_dlq] + UNPARSEABLE}
        depths = {}

        def reached() -> bool:
            depths.update({queue: broker.depth(queue) for queue in expected})
            return depths == expected

        try:
            stack.wait_for(reached, f"dead-letter queue depths {expected} (were {before})", 30)
        except AssertionError as error:
            raise AssertionError(f"{error}; last seen {depths}, and {broker.depth(QUEUE_INGESTOR_DATA)} "
                                 f"messages waiting in {QUEUE_INGESTOR_DATA}") from None
        good = Gateway(stack, user, unique("sut-poison-good"))
        for _ in range(GOOD_AFTER):
            good.request_plot()
        after_good = wait_jobs_finished(stack, good.test_id, GOOD_AFTER)
        depths_after = {queue: broker.depth(queue) for queue in expected}

    assert after_good["results"] == {"done": GOOD_AFTER, "failed": 0}, after_good
    assert depths_after == expected, "more was dead-lettered than the poison messages"
    poisoned = wait_ledger(stack, test_id, lambda entry: entry["results"]["failed"] == INVALID, 60,
                           f"{INVALID} requests FAILED")
    assert poisoned["requests"] == INVALID and poisoned["results"]["done"] == 0, poisoned
    unstick_unless_passed.clear()
