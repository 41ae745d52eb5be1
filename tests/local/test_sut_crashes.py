"""kill -9 of the ingestor or the registry mid-work: the supervisor restarts it, and every
request still ends DONE once, with every activity log stored once."""

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from elves.constants import QUEUE_INGESTOR_DATA
from sut_helpers import Broker, Gateway, finished, ledger, unique, wait_jobs_finished, wait_ledger

PLOTS = 100
THREADS = 8
RESTART_SECONDS = 240  # a JVM start on a busy 2-core machine, plus the supervisor's back-off


def kill_every_replica(stack, deployment: str) -> dict[str, int]:
    """SIGKILL through the supervisor; the pods and the pids they had."""
    killed = {}
    for pod in stack.pods(deployment):
        if pod["pid"]:
            killed[pod["pod"]] = stack.supervisor.kill(deployment, pod["pod"])["pid"]
    assert killed, f"no running {deployment} to kill"
    return killed


def wait_restarted(stack, deployment: str, killed: dict[str, int]) -> None:
    def back() -> bool:
        pods = {pod["pod"]: pod for pod in stack.pods(deployment)}
        return all(pods.get(name, {}).get("ready") and pods[name]["pid"] != pid for name, pid in killed.items())

    stack.wait_for(back, RESTART_SECONDS, f"{', '.join(killed)} to be restarted and ready")


def scratch_jobs(stack, pod: str) -> list[str]:
    """Job directories left in an ingestor replica's scratch directory (docs/architecture.md)."""
    root = Path(stack.supervisor.state()["supervisor"]["stateDir"]) / "scratch" / pod
    return sorted(path.name for path in root.iterdir()) if root.exists() else []


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
    for pod in killed:
        stack.wait_for(lambda pod=pod: scratch_jobs(stack, pod) == [], 30, f"{pod}'s scratch directory to be empty")


def test_registry_killed_while_logs_and_results_flow_loses_nothing(exclusive_stack):
    stack = exclusive_stack
    gateway = Gateway(stack, unique("sut-kill-registry"), unique("sut-kill-registry"))
    sent = threading.Semaphore(0)
    answers = []

    def send() -> None:
        # getData needs only the broker: it keeps being accepted while the registry is away.
        for _ in range(PLOTS):
            answers.append(gateway.get_data().status_code)
            sent.release()

    sender = threading.Thread(target=send, name="getData sender")
    sender.start()
    try:
        for _ in range(PLOTS // 3):
            assert sent.acquire(timeout=30), "getData stalled before the kill"
        before = ledger(stack, gateway.test_id)
        killed = kill_every_replica(stack, "registry")
    finally:
        sender.join(timeout=120)
    assert not sender.is_alive(), "getData calls still running 120 s after the kill"

    assert finished(before) < PLOTS, f"nothing in flight at the kill: {before}"
    assert answers == [202] * PLOTS, f"getData answers: {sorted(set(answers))}"
    wait_restarted(stack, "registry", killed)
    final = wait_jobs_finished(stack, gateway.test_id, PLOTS)
    final = wait_ledger(stack, gateway.test_id, lambda entry: entry["logs"] >= PLOTS, 60, f"{PLOTS} logs")
    assert final["requests"] == PLOTS and final["results"] == {"done": PLOTS, "failed": 0}, final
    assert final["logs"] == PLOTS and final["logsByEndpoint"] == {"getData": PLOTS}, final
