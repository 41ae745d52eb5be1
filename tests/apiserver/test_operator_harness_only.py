"""The harness alone (tier 3): an operator told that Elves' own system is not installed
(the chart's system.enabled: false, ELVES_SYSTEM_ENABLED=false), whose release namespace holds
only its Secret (the seal key), no Deployment of Elves'. A LoadTest that names no SystemUnderTest
ends in Error naming spec.target.systemUnderTest before anything changes; one of another team's
SystemUnderTest runs to its verdict without ever looking for Elves' services.

The test plays k6-operator and the kubelet: see test_operator_kit.py."""

from __future__ import annotations

import base64

from polling import wait_for

from .test_operator_foreign_target import (  # noqa: F401 - the module's fixtures, shared
    decoy, foreign, orders, orders_loadtest, prometheus, run_to_a_verdict,
)
from .test_operator_kit import JWT_SECRET, Cluster, operator
from .test_operator_loadtests import cluster, env, gateway, phase_is, stand_in  # noqa: F401


def harness_alone(cluster: Cluster, env: dict, settings: dict) -> tuple[str, dict]:
    """A release namespace as the chart leaves it with system.enabled: false (its Secret with the
    seal key only), and the operator's settings for it."""
    namespace = cluster.namespace(f"{env['system']}-alone")
    cluster.core.create_namespaced_secret(namespace, {
        "metadata": {"name": "elves"}, "type": "Opaque",
        "data": {"jwt-secret": base64.b64encode(JWT_SECRET.encode()).decode()}})
    return namespace, {**settings, "ELVES_SYSTEM_NAMESPACE": namespace, "ELVES_SYSTEM_ENABLED": "false"}


def test_a_loadtest_naming_no_target_ends_in_error_naming_the_field(cluster, env, orders, monkeypatch, caplog):
    ns, name = env["namespace"], "no-target"
    release, settings = harness_alone(cluster, env, orders["settings"])
    with operator(monkeypatch, caplog, ns, settings) as runner:
        cluster.create_loadtest(ns, name, {"load": {"scenario": "system-mix", "rate": "60/min", "duration": "1m"}})
        status = wait_for(phase_is(cluster, ns, name, "Error"), "the Error phase")
        error, = [c for c in status["conditions"] if c["type"] == "HarnessError"]
        assert error["reason"] == "InvalidSpec"
        assert error["message"].startswith("spec.target.systemUnderTest: this release installs the harness alone"), \
            error["message"]
        # Nothing was taken or started.
        assert status.get("snapshot") is None and status.get("startedAt") is None
        assert cluster.testrun(ns, f"elves-{name}-0") is None
        assert cluster.lock_holder(release) == "" and cluster.lock_holder(ns) == ""
    assert runner.exit_code == 0
    assert runner.exception is None


def test_a_loadtest_of_another_system_runs_to_its_verdict_without_elves_system(
        cluster, env, orders, foreign, monkeypatch, caplog, tmp_path):
    ns, name = env["namespace"], "orders-alone"
    release, settings = harness_alone(cluster, env, orders["settings"])
    orders["system_under_test"]()
    with operator(monkeypatch, caplog, ns, settings) as runner:
        objective = {"metric": "pod_restarts", "workload": "orders-api", "op": "==", "value": 0}
        cluster.create_loadtest(ns, name, orders_loadtest(slo=[objective]))
        status = run_to_a_verdict(cluster, ns, name, tmp_path)
        assert status["phase"] == "Succeeded", status["conditions"]
        # An objective on one of its workloads: a check of that workload alone.
        (check,) = status["verdict"]["checks"]
        assert (check["name"], check["observed"], check["ok"]) == ("pod_restarts{orders-api}", 0, True)
        assert status["snapshot"]["deployments"] == {}  # no Deployment of Elves' looked for, none to restore
        assert status["results"]["ledger"]["lostRequests"] == 0
        assert cluster.apps.list_namespaced_deployment(release).items == []
        assert cluster.lock_holder(ns) == ""  # its target's lock, given back
    assert runner.exit_code == 0
    assert runner.exception is None
