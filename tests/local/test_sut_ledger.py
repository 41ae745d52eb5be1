"""The ledger of a test id counts exactly what the test sent: every accepted request has one
result, every 2xx answer one activity log, nothing more."""

import random
from concurrent.futures import ThreadPoolExecutor

from sut_helpers import Gateway, unique, wait_jobs_finished, wait_ledger

PLOTS = 200
READS = 200
THREADS = 8


def test_ledger_counts_exactly_what_was_sent(local_stack):
    gateway = Gateway(local_stack, unique("sut-ledger"), unique("sut-ledger"))
    with ThreadPoolExecutor(THREADS) as pool:
        request_ids = list(pool.map(lambda _: gateway.request_plot(), range(PLOTS)))
    # Once the registry has every request, getStatus answers 200 (never the 404 of "not yet").
    wait_ledger(local_stack, gateway.test_id, lambda entry: entry["requests"] == PLOTS, 60,
                f"the registry to record the {PLOTS} requests")

    choices = random.Random(2).choices(["getStatus", "getHistory", "getUser"], k=READS)
    reads = {"getStatus": lambda: gateway.status(random.choice(request_ids)),
             "getHistory": gateway.history, "getUser": gateway.me}
    with ThreadPoolExecutor(THREADS) as pool:
        answers = list(pool.map(lambda endpoint: (endpoint, reads[endpoint]().status_code), choices))

    assert [a for a in answers if a[1] != 200] == [], "reads that did not answer 200"
    sent = {"getData": PLOTS, **{endpoint: choices.count(endpoint) for endpoint in set(choices)}}
    assert dict(gateway.logged) == sent
    final = wait_jobs_finished(local_stack, gateway.test_id, PLOTS)
    final = wait_ledger(local_stack, gateway.test_id, lambda entry: entry["logs"] >= PLOTS + READS, 60,
                        f"{PLOTS + READS} activity logs")
    assert final["requests"] == PLOTS
    assert final["results"] == {"done": PLOTS, "failed": 0}
    assert final["logs"] == PLOTS + READS
    assert final["logsByEndpoint"] == sent
    assert final["duplicates"] == 0
