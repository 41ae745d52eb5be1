"""The ledger of a test id counts exactly what the test sent: every accepted request has one
result, every 2xx answer one activity log, nothing more."""

import random
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from sut_helpers import Gateway, finished, job_deadline, unique, wait_ledger

PLOTS = 100
READS = 300
THREADS = 8


def test_ledger_counts_exactly_what_was_sent(local_stack):
    gateway = Gateway(local_stack, unique("sut-ledger"), unique("sut-ledger"))
    with ThreadPoolExecutor(THREADS) as pool:
        request_ids = list(pool.map(lambda _: gateway.request_plot(), range(PLOTS)))
    # Once the registry has every request, getStatus answers 200 (never the 404 of "not yet").
    wait_ledger(local_stack, gateway.test_id, lambda entry: entry["requests"] == PLOTS, 60,
                f"the registry to record the {PLOTS} requests")

    rng = random.Random(2)
    calls = [(endpoint, rng.choice(request_ids))
             for endpoint in rng.choices(["getStatus", "getHistory", "getUser"], k=READS)]
    reads = {"getStatus": gateway.status, "getHistory": lambda _: gateway.history(), "getUser": lambda _: gateway.me()}
    with ThreadPoolExecutor(THREADS) as pool:
        answers = list(pool.map(lambda call: (call[0], reads[call[0]](call[1]).status_code), calls))

    assert [a for a in answers if a[1] != 200] == [], "reads that did not answer 200"
    sent = {"getData": PLOTS, **Counter(endpoint for endpoint, _ in calls)}
    assert dict(gateway.logged) == sent
    final = wait_ledger(local_stack, gateway.test_id,
                        lambda entry: finished(entry) >= PLOTS and entry["logs"] >= PLOTS + READS,
                        job_deadline(PLOTS), f"{PLOTS} results and {PLOTS + READS} activity logs")
    assert final["requests"] == PLOTS
    assert final["results"] == {"done": PLOTS, "failed": 0}
    assert final["logs"] == PLOTS + READS
    assert final["logsByEndpoint"] == sent
    assert final["duplicates"] == 0
