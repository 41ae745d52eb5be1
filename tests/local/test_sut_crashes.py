"""kill -9 of the ingestor or the registry mid-work: the supervisor restarts it, and every
request still ends DONE once, with every activity log stored once."""

import threading
from concurrent.futures import ThreadPoolExecutor

from elves.constants import QUEUE_INGESTOR_DATA
from sut_helpers import (Broker, Gateway, finished, job_deadline, kill_every_replica, ledger, unique,
                         wait_jobs_finished, wait_ledger, wait_restarted, wait_scratch_empty)

PLOTS = 100
THREADS = 8


def test_ingestor_killed_with_a_pile_queued_loses_nothing(exclusive_stack):
    stack = exclusive_stack
    gateway = Gateway(stack, unique("sut-kill-ingestor"), unique("sut-kill-ingestor"))
    with ThreadPoolExecutor(THREADS) as pool:
        request_ids = list(pool.map(lambda _: gateway.request_plot(), range(PLOTS)))
    with Broker(stack) as broker:
        queued = broker.depth(QUEUE_INGESTOR_DATA)
    done_before = finished(ledger(stack, gateway.test_id))

    killed = kill_every_replica(stack, "ingestor")

    assert queued > 0 and done_before < PLOTS, f"nothing left to interrupt: {queued} queued, {done_before} done"
    wait_restarted(stack, "ingestor", killed)
    final = wait_jobs_finished(stack, gateway.test_id, PLOTS)
    assert len(set(request_ids)) == PLOTS
    assert final["requests"] == PLOTS and final["results"] == {"done": PLOTS, "failed": 0}, final
    assert final["logs"] == PLOTS and final["logsByEndpoint"] == {"getData": PLOTS}, final
    # The jobs cut short were done again; the registry threw away the repeated results.
    assert final["duplicates"] >= 1, final
    # The killed JVM could not clean up: the replica that took its place did.
    wait_scratch_empty(stack, set(killed))


def test_registry_killed_while_logs_and_results_flow_loses_nothing(exclusive_stack):
    stack = exclusive_stack
    gateway = Gateway(stack, unique("sut-kill-registry"), unique("sut-kill-registry"))
    rounds = threading.Semaphore(0)
    answers = {"getData": [], "getUser": []}

    def send() -> None:
        # getData needs only the broker: it is accepted while the registry is away. getUser
        # reads from the registry: 503 then, and a 503 leaves no activity log.
        for _ in range(PLOTS):
            answers["getData"].append(gateway.get_data().status_code)
            answers["getUser"].append(gateway.me().status_code)
            rounds.release()

    sender = threading.Thread(target=send, name="getData and getUser sender")
    sender.start()
    try:
        for _ in range(PLOTS // 3):
            assert rounds.acquire(timeout=30), "the calls stalled before the kill"
        before = ledger(stack, gateway.test_id)
        killed = kill_every_replica(stack, "registry")
    finally:
        sender.join(timeout=120)
    assert not sender.is_alive(), "calls still running 120 s after the kill"

    assert finished(before) < PLOTS, f"nothing in flight at the kill: {before}"
    assert answers["getData"] == [202] * PLOTS, f"getData answers: {sorted(set(answers['getData']))}"
    assert set(answers["getUser"]) <= {200, 503}, f"getUser answers: {sorted(set(answers['getUser']))}"
    wait_restarted(stack, "registry", killed)
    logs = sum(gateway.logged.values())
    final = wait_ledger(stack, gateway.test_id, lambda entry: finished(entry) >= PLOTS and entry["logs"] >= logs,
                        job_deadline(PLOTS), f"{PLOTS} results and {logs} logs")
    assert final["requests"] == PLOTS and final["results"] == {"done": PLOTS, "failed": 0}, final
    assert final["logs"] == logs and final["logsByEndpoint"] == dict(gateway.logged), final
