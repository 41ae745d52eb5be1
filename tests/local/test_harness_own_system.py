"""Another team's event-driven system judged in the local mode: a SystemUnderTest in
the LoadTest's own file describes an orders system running as processes on this machine (not
Elves': tests/local/own_system_orders.py, its worker slower than the load), and `elves run`
drives the example's k6 script at it, waits for its queue (read from its own metrics, which the
local Prometheus scrapes from the own-system file) and its ledger to complete, and judges it:
accepted = persisted, nothing lost, Elves' registry never asked. Its process is listed for the
local Prometheus as the workload orders-worker, whose replicas the results show and whose unready
stretch an objective judges (no kube-state-metrics reports another team's processes locally)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from elves.local.layout import Layout
from elves.local.ports import HOST
from elves.local.prometheus_config import OWN_SYSTEM_TARGETS
from test_harness_kit import EXAMPLES, REPO, loadtest, run_elves

HERE = Path(__file__).resolve().parent
RATE_PER_SECOND = 20
STORED_PER_SECOND = 14  # slower than the load: a backlog builds and the drain must wait for it
TEST_ID_HEADER = "X-Test-Id"

ORDERS = {
    "apiVersion": "elves.dev/v1alpha1", "kind": "SystemUnderTest", "metadata": {"name": "orders"},
    "spec": {
        "workloads": [{"name": "orders-api"}, {"name": "orders-worker"}],  # not managed locally
        "queues": {"promql": "max by (queue) (orders_queue_depth)"},
        "testIdHeader": TEST_ID_HEADER,
        "ledger": {"accepted": {"endpoint": "placeOrder"},
                   "persisted": {"promql": 'sum(orders_saved_total{test_id="$TEST_ID"})'}},
        "drained": {"ledgerComplete": True},
    },
}


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def orders_system(local_stack) -> Iterator[str]:
    """The orders system running on loopback and listed for the local Prometheus; its URL."""
    port = _free_port()
    process = subprocess.Popen([sys.executable, str(HERE / "own_system_orders.py"), str(port), str(STORED_PER_SECOND)],
                               stdout=subprocess.PIPE, text=True)
    listing = Layout(local_stack.settings.state_dir).prometheus / OWN_SYSTEM_TARGETS
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        listing.write_text(json.dumps([{"targets": [f"{HOST}:{port}"],
                                        "labels": {"job": "orders", "workload": "orders-worker"}}]))
        local_stack.wait_for(lambda: local_stack.value('up{job="orders"}') == 1,
                             "the local Prometheus to scrape the orders system", 30)
        yield f"http://{HOST}:{port}"
    finally:
        listing.write_text("[]\n")
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def judged(local_stack, orders_system, tmp_path_factory):
    local_stack.wait_ready()
    script = EXAMPLES / "own-system" / "orders.js"
    test = loadtest("orders-steady", {
        "target": {"systemUnderTest": "orders"},
        "load": {"script": {"path": str(script)}, "rate": f"{RATE_PER_SECOND}/s", "duration": "20s",
                 "mix": {"placeOrder": 1}},
        "drain": {"timeout": "2m"},
        "slo": [{"metric": "lost_requests", "op": "==", "value": 0}, {"metric": "duplicates", "op": "==", "value": 0},
                {"metric": "unready_seconds", "workload": "orders-worker", "op": "<", "value": "5s"}],
    })
    return run_elves(tmp_path_factory.mktemp("own-system"), test, ORDERS, env={"ORDERS_URL": orders_system})


def test_another_systems_ledger_is_exact_and_its_backlog_drained(judged):
    assert judged.exit_code == 0, judged.output
    assert "Verdict: PASSED" in judged.output
    results = judged.run_results()
    ledger = results["ledger"]
    assert ledger["kind"] == "counts"
    # 20 s at 20/s: about 400 orders placed, every one accepted and stored, none twice.
    assert ledger["requestsAccepted"] > 300, ledger
    assert ledger["requestsPersisted"] == ledger["requestsAccepted"] and ledger["lostRequests"] == 0
    assert ledger["surplus"] == 0
    # The worker stores 14/s of the 20/s placed: a backlog of about 120 that the drain waited out.
    queue = results["queues"]["orders.in"]
    assert queue["max"] >= 50 and queue["final"] == 0, queue
    assert results["drainCompleted"] is True and results["drainSeconds"] >= 3, results["drainSeconds"]


def test_its_workload_is_the_process_listed_for_it_and_judged_by_name(judged):
    worker = judged.run_results()["deployments"]["orders-worker"]
    assert (worker["replicasMin"], worker["replicasMax"], worker["unreadySeconds"]) == (1, 1, 0), worker
    check = judged.check("unready_seconds{orders-worker}")
    assert check["ok"] and check["observed"] == 0, check


def test_elves_own_registry_and_tokens_stay_out_of_it(judged):
    # Only the target's queue is judged, none of Elves' own, and the runner got no Elves token.
    assert set(judged.run_results()["queues"]) == {"orders.in"}
    assert "registry" not in judged.run_results()["ledger"]["acceptedCounted"]
    assert judged.run_results()["ledger"]["logsExpected"] == 0
