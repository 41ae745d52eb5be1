"""Another system's readiness (tier 3): the operator waits for the workloads its SystemUnderTest
lists, by name and by label selector, Deployments and StatefulSets, before the load and again
before the verdict, where the chart lets it read them (operator.targetNamespaces). No pod runs
here: the test writes the workloads' status as their controllers would, and plays k6-operator
(see test_operator_kit.py)."""

from __future__ import annotations

from typing import Any

from polling import wait_for

from .test_operator_foreign_target import (  # noqa: F401 - the module's fixtures, shared
    decoy, foreign, orders, orders_loadtest, prometheus, run_to_a_verdict,
)
from .test_operator_kit import Cluster, operator
from .test_operator_loadtests import cluster, env, events_with, gateway, stand_in  # noqa: F401

WORKERS = 2


def workloads(cluster: Cluster, ns: str) -> None:
    """orders-api and orders-worker (Deployments, listed by name) and orders-db (a StatefulSet the
    SystemUnderTest chooses by its label tier=db), none of them rolled out yet."""
    for name, replicas in (("orders-api", 1), ("orders-worker", WORKERS)):
        labels = {"app": name}
        cluster.apps.create_namespaced_deployment(ns, {"metadata": {"name": name}, "spec": {
            "replicas": replicas, "selector": {"matchLabels": labels}, "template": {
                "metadata": {"labels": labels}, "spec": {"containers": [{"name": "app", "image": "shop:test"}]}}}})
    labels = {"app": "orders-db", "tier": "db"}
    cluster.apps.create_namespaced_stateful_set(ns, {"metadata": {"name": "orders-db", "labels": labels}, "spec": {
        "replicas": 1, "serviceName": "orders-db", "selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels}, "spec": {"containers": [{"name": "db", "image": "postgres:test"}]}}}})


def database_ready(cluster: Cluster, ns: str) -> None:
    body = cluster.plain(cluster.apps.read_namespaced_stateful_set("orders-db", ns))
    cluster.apps.patch_namespaced_stateful_set_status("orders-db", ns, {"status": {
        "observedGeneration": body["metadata"]["generation"], "replicas": 1, "readyReplicas": 1,
        "currentReplicas": 1, "updatedReplicas": 1}})


def workers_ready(cluster: Cluster, ns: str, ready: int) -> None:
    cluster.apps.patch_namespaced_deployment_status("orders-worker", ns, {"status": {"readyReplicas": ready,
                                                                                     "availableReplicas": ready}})


def waiting_for(cluster: Cluster, ns: str, name: str) -> str:
    return (cluster.status(ns, name).get("progress") or {}).get("waitingFor") or ""


def test_the_targets_workloads_are_awaited_before_the_load_and_before_the_verdict(
        cluster, env, orders, foreign, monkeypatch, caplog, tmp_path):
    ns, name = env["namespace"], "orders-ready"
    workloads(cluster, ns)
    orders["system_under_test"](workloads=[{"name": "orders-api"}, {"name": "orders-worker"},
                                           {"selector": {"matchLabels": {"tier": "db"}}, "kind": "StatefulSet"}])
    settings = {**orders["settings"], "ELVES_TARGET_NAMESPACES": ns}
    with operator(monkeypatch, caplog, ns, settings) as runner:
        cluster.create_loadtest(ns, name, orders_loadtest(slo=[
            {"metric": "pod_restarts", "workload": "orders-worker", "op": "==", "value": 0}]))
        # Before the load: each workload not ready is named with its kind and why; no load starts.
        wait_for(lambda: waiting_for(cluster, ns, name).startswith("system not ready: "), "the wait for the target")
        waiting = waiting_for(cluster, ns, name)
        for reason in ("Deployment orders-api: the change is not rolled out yet",
                       "Deployment orders-worker: the change is not rolled out yet",
                       "StatefulSet orders-db: 0 of 1 replicas ready"):
            assert reason in waiting, waiting
        assert cluster.testrun(ns, f"elves-{name}-0") is None
        cluster.make_ready(ns, "orders-api")
        cluster.make_ready(ns, "orders-worker")
        wait_for(lambda: waiting_for(cluster, ns, name) == "system not ready: StatefulSet orders-db: 0 of 1 replicas ready",
                 "the wait for the database alone")
        assert cluster.testrun(ns, f"elves-{name}-0") is None
        database_ready(cluster, ns)

        # The load ends with a worker's successor still starting: the verdict waits for it.
        def a_worker_back_once_the_drain_waits() -> Any:
            run = (cluster.status(ns, name).get("runs") or [{}])[0]
            if run.get("unreadyAfterLoad"):
                workers_ready(cluster, ns, WORKERS)

        status = run_to_a_verdict(cluster, ns, name, tmp_path, before_finish=lambda: workers_ready(cluster, ns, 1),
                                  controllers=a_worker_back_once_the_drain_waits)
        assert status["phase"] == "Succeeded", status["conditions"]
        run = status["runs"][0]
        assert run["unreadyAfterLoad"] == f"Deployment orders-worker: 1 of {WORKERS} replicas ready"
        said = f"draining: waiting for the workloads to be ready again: Deployment orders-worker: 1 of {WORKERS} replicas ready"
        wait_for(lambda: said in events_with(cluster, ns, name, "Progress"), "the Event saying what the drain waits for")
        # The StatefulSet its selector chose is in the snapshot (restored like the named ones) and the results.
        assert status["snapshot"]["workloads"] == {"orders-api": {"kind": "Deployment", "replicas": 1},
                                                   "orders-db": {"kind": "StatefulSet", "replicas": 1},
                                                   "orders-worker": {"kind": "Deployment", "replicas": WORKERS}}
        assert set(status["results"]["deployments"]) == {"orders-api", "orders-db", "orders-worker"}
        # The objective on the worker is judged on the worker alone.
        (check,) = status["verdict"]["checks"]
        assert (check["name"], check["ok"]) == ("pod_restarts{orders-worker}", True), check
    assert runner.exit_code == 0
    assert runner.exception is None
