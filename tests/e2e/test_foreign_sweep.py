"""Tier 4: a replicas sweep of another system's worker on the real cluster.

The orders system of test_foreign_system.py (its `shop` fixture: the system in namespace
`shop`, scraped, the release allowed to judge and change it) and loadtests/orders-workers-sweep.yaml:
the worker's PREFETCH and memory limit set for the test, its replicas swept 1 then 2 under the
same 20 s load. Each point drains with the ledger exact; the sweep table has a row per point and
says which held; after the last run the worker is back as it was (replicas, env, limits).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from test_foreign_system import LOADTESTS, SHOP, elves_deployments, shop  # noqa: F401 - shop: the fixture

from kube import Cluster
from polling import wait_for
from release import run_loadtest

WORKER = "orders-worker"
SWEPT = f"system.replicas.{WORKER}"


@pytest.fixture(scope="module")
def shop_gone_after(installed: Cluster) -> Iterator[None]:
    """Set up before `shop` and so torn down after it: waits until `shop`'s namespace is gone, so
    that test_foreign_system.py, which deploys it again, does not meet it still terminating."""
    yield
    installed.kubectl("wait", "--for=delete", f"namespace/{SHOP}", "--timeout=300s", timeout=330)


def worker_container(cluster: Cluster) -> tuple[int, dict]:
    deployment = cluster.kubectl_json("get", "deployment", WORKER, "-n", SHOP)
    container, = deployment["spec"]["template"]["spec"]["containers"]
    return deployment["spec"]["replicas"], container


def test_a_replicas_sweep_of_the_worker_says_how_many_hold_the_load(shop_gone_after, shop: Cluster) -> None:
    replicas_before, container_before = worker_container(shop)
    elves_before = elves_deployments(shop)
    lt = run_loadtest(shop, LOADTESTS / "orders-workers-sweep.yaml", "orders-workers", namespace=SHOP)
    status = lt["status"]
    rows = status.get("sweep") or []
    print(f"foreign sweep: phase {status['phase']}; " + "; ".join(
        f"{row['point']}: throughput {row.get('throughput')}, deepest {row.get('queueDepthMax')}, lost"
        f" {row.get('lost')}, passed {row.get('passed')}" for row in rows))
    assert status["phase"] == "Succeeded", json.dumps(status.get("verdict"), indent=1)[:4000]
    # One run per point, each drained with the ledger exact.
    assert [run["point"] for run in status["runs"]] == [{SWEPT: 1}, {SWEPT: 2}]
    for run in status["runs"]:
        ledger = run["results"]["ledger"]
        assert ledger["requestsAccepted"] == ledger["requestsPersisted"] > 0 and ledger["lostRequests"] == 0, ledger
        assert run["results"]["drainCompleted"] is True, run["results"]
        # The run had the worker's replicas of its point (kube-state-metrics' desired replicas).
        assert run["results"]["deployments"][WORKER]["replicasMax"] == run["point"][SWEPT], run["results"]["deployments"]
    assert [(row["point"], row["passed"]) for row in rows] == [({SWEPT: 1}, True), ({SWEPT: 2}, True)]
    # Everything the test changed of the worker is back: replicas, PREFETCH, the memory limit.
    wait_for(lambda: worker_container(shop) == (replicas_before, container_before),
             "orders-worker's replicas, env and limits to be restored", 120, interval=2)
    assert elves_deployments(shop) == elves_before
