"""PostgreSQL stopped under a trickle of getData: the gateway keeps accepting (getData needs
only the broker), the registry waits for its database holding its deliveries instead of
returning them to the queue, and afterwards every request is DONE with its one log: nothing
lost, nothing FAILED, nothing dead-lettered, no delivery attempt spent on the wait.

The outage lasts ELVES_TEST_DB_OUTAGE_SECONDS (45 by default: longer than the registry's old
30-second retry, short enough for CI). A 7-minute outage is the same test by hand:
ELVES_TEST_DB_OUTAGE_SECONDS=420 .venv/bin/python -m pytest tests/local/test_sut_database_outage.py
Run so on 2026-11-25 (2-core machine shared with a cluster test, load average 6-16): PostgreSQL
down 421 s, all 429 getData answered 202, all 429 DONE within 6 s of the database's return,
none FAILED or dead-lettered, no delivery returned; the test took 7 min 18 s.
"""

import os
import time

from elves.constants import DEAD_LETTER_QUEUES

from sut_helpers import TRICKLE_LIMIT_SECONDS, Broker, Gateway, Trickle, finished, \
    job_deadline, statuses, unique, wait_ledger

DOWN_SECONDS = float(os.environ.get("ELVES_TEST_DB_OUTAGE_SECONDS", "45"))
# Slow enough that one ingestor on a busy machine works off what piles up during the outage.
PER_SECOND = 1
RETURNED_SERIES = 'elves_messages_returned_total{application="registry"}'
RETURNED = f"sum({RETURNED_SERIES})"


def returned_by_registry(stack) -> float:
    """Deliveries the registry gave back to its queues, as Prometheus last scraped it."""
    return stack.value(RETURNED) or 0.0


def test_database_outage_loses_nothing_and_spends_no_delivery(exclusive_stack):
    stack = exclusive_stack
    gateway = Gateway(stack, unique("sut-db-outage"), unique("sut-db-outage"))
    with Broker(stack) as broker:
        dead_before = {queue: broker.depth(queue) for queue in DEAD_LETTER_QUEUES}
    returned_before = returned_by_registry(stack)
    trickle = Trickle(gateway, PER_SECOND, DOWN_SECONDS + TRICKLE_LIMIT_SECONDS)
    trickle.start()
    try:
        stack.wait_for(lambda: trickle.codes().count(202) >= 5, "getData before the outage", 30)
        operation = stack.supervisor.infra_restart("postgres", down_seconds=DOWN_SECONDS)
        stack.wait_for(lambda: [op for op in stack.supervisor.state()["operations"]
                                if op["id"] == operation["id"] and op["state"] != "running"],
                       "PostgreSQL to be back", DOWN_SECONDS + TRICKLE_LIMIT_SECONDS)
        outage_end = len(trickle.answers)
        stack.wait_for(lambda: [code for code, _ in trickle.answers[outage_end:]].count(202) >= 5,
                       "getData accepted after the outage", TRICKLE_LIMIT_SECONDS)
    finally:
        trickle.stop.set()
        trickle.join(timeout=30)

    codes = trickle.codes()
    assert set(codes) == {202}, f"getData needs only the broker, yet answered {sorted(set(map(str, codes)))}"
    accepted = [request_id for _, request_id in trickle.answers]
    stack.wait_ready()
    # The results and the activity logs have consumers of their own, each retrying on its own
    # clock (5 s) once the database is back: wait for both.
    final = wait_ledger(stack, gateway.test_id,
                        lambda entry: entry["requests"] == finished(entry) == len(accepted) <= entry["logs"],
                        job_deadline(len(accepted)), f"results and logs for the {len(accepted)} accepted requests")
    assert statuses(stack, accepted) == {"DONE": len(accepted)}
    assert final["results"] == {"done": len(accepted), "failed": 0}, final
    assert final["logsByEndpoint"] == {"getData": len(accepted)}, final
    with Broker(stack) as broker:
        assert {queue: broker.depth(queue) for queue in DEAD_LETTER_QUEUES} == dead_before
    # Prometheus scrapes every 5 s: compare what a scrape taken after all this saw.
    checked = time.time()
    stack.wait_for(lambda: (stack.value(f"max(timestamp({RETURNED_SERIES}))") or 0) > checked, "a scrape of the registry after the run",
                   60)
    assert returned_by_registry(stack) == returned_before, "the registry returned deliveries while it waited"
