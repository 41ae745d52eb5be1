"""The operator under the chart's own RBAC (chart_rbac.py): it refuses what a LoadTest may not
ask for before it changes anything, prunes old reports with the permissions the chart grants,
saves the system's snapshot before changing it (a crash in between restores the original),
trusts the seal, not status.restored, and keeps a deleted LoadTest until its system is
restored or it says to skip that.

The test plays k6-operator and stands in for the registry as test_operator_kit.py says.
kopf runs with --all-namespaces, as the chart runs it (serving named namespaces, kopf would
list the namespaces, which the chart's RBAC does not grant). Some tests drive the operator's
Driver directly (one tick per call, as kopf's timer would),
so a crash can be placed between two ticks.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from kubernetes import config
from polling import wait_for

from elves.constants import API_GROUP, API_VERSION, PLURAL
from elves.k8s import names
from elves.k8s.driver import Driver
from elves.k8s.kube import MERGE_PATCH, Kube
from elves.k8s.settings import OperatorSettings

from . import control_plane as cp
from .chart_rbac import install_operator_rbac
from .test_operator_kit import Cluster, operator
from .test_operator_loadtests import (  # noqa: F401 - the module's fixtures, shared
    cluster, events_with, gateway, phase_is, prometheus, stand_in,
)

LOAD = {"scenario": "system-mix", "rate": "60/min", "duration": "5m"}


@pytest.fixture
def chart(request: pytest.FixtureRequest, cluster: Cluster, control_plane: cp.ControlPlane, kubeconfig: Path,
          gateway: Any, stand_in: Any, prometheus: Any, tmp_path: Path):
    """A release namespace with the system's objects and the chart's operator RBAC, a namespace the
    chart lets LoadTests run in and one it does not; the operator's settings as the chart sets
    them, authenticated as its ServiceAccount. `request.param`: more chart values for the operator."""
    short = request.node.name.removeprefix("test_")[:24].rstrip("_").replace("_", "-")
    system, allowed, other = (cluster.system(f"rel-{short}"), cluster.namespace(f"ok-{short}"),
                              cluster.namespace(f"no-{short}"))
    stand_in.namespaces.add(system)  # its (empty) queues, labelled with its namespace
    more = getattr(request, "param", {})  # or a function of the namespace LoadTests run in
    values = {"operator": {"loadTestNamespaces": [allowed], **(more(allowed) if callable(more) else more)}}
    operator_kubeconfig, chart_env = install_operator_rbac(control_plane, system, values, tmp_path)
    settings = {**{k: v for k, v in chart_env.items() if k.startswith(("ELVES_LOADTEST", "ELVES_RUNNER", "ELVES_MAX"))},
                "KUBECONFIG": str(operator_kubeconfig), "ELVES_SYSTEM_NAMESPACE": system,
                "ELVES_SECRET_NAME": "elves", "ELVES_GATEWAY_URL": gateway[0], "ELVES_REGISTRY_URL": stand_in.url,
                "ELVES_PROMETHEUS_URL": prometheus.url, "ELVES_GRAFANA_URL": ""}
    return {"system": system, "allowed": allowed, "other": other, "settings": settings, "chart_env": chart_env}


def template_of(cluster: Cluster, namespace: str) -> dict[str, Any]:
    """What a reset or a change would touch of the three Deployments."""
    return {name: (d["metadata"]["generation"], d["spec"]["replicas"], d["spec"]["template"])
            for name in ("gateway", "registry", "ingestor") for d in [cluster.deployment(namespace, name)]}


def harness_error(status: dict[str, Any]) -> dict[str, Any]:
    (error,) = [c for c in status["conditions"] if c["type"] == "HarnessError"]
    return error


def test_a_loadtest_with_reset_in_a_namespace_not_allowed_leaves_the_system_untouched(
        cluster, chart, monkeypatch, caplog):
    system, intruders = chart["system"], chart["other"]
    # The chart says where LoadTests run: its loadTestNamespaces and its own namespace.
    assert chart["chart_env"]["ELVES_LOADTEST_NAMESPACES"] == f"{chart['allowed']},{system}"
    for pod in ("rabbitmq-0", "postgres-0"):  # what a reset would exec into
        cluster.pod(system, pod, {"app.kubernetes.io/component": pod[:-2]}, phase="Running")
    before = template_of(cluster, system)
    spec = {"reset": True, "system": {"replicas": {"ingestor": 3}}, "load": LOAD}
    with operator(monkeypatch, caplog, None, chart["settings"]) as runner:
        cluster.create_loadtest(intruders, "emptier", spec)
        status = wait_for(phase_is(cluster, intruders, "emptier", "Error"), "the Error phase")
        error = harness_error(status)
        assert error["reason"] == "InvalidSpec"
        assert error["message"].startswith(f"metadata.namespace: LoadTests in namespace {intruders} are not run "
                                           "by this operator")
        assert f"{chart['allowed']}, {system}" in error["message"]
        assert wait_for(lambda: events_with(cluster, intruders, "emptier", "Error"), "the Error event")
        # Nothing reset, nothing changed, the system never taken.
        assert template_of(cluster, system) == before
        assert cluster.lock_holder(system) == ""
        assert "snapshot" not in status and status.get("runs", []) == []
        assert cluster.pod_names(system) == ["postgres-0", "rabbitmq-0"]
    assert runner.exit_code == 0
    assert runner.exception is None


@pytest.mark.parametrize("chart", [lambda allowed: {"runner": {
    "envFromSecrets": {allowed: ["k6-hosts"]}, "nodeSelector": {"pool": ["load"]}, "tolerations": [],
    "affinity": False}}], indirect=True)
def test_runners_asking_for_a_secret_or_nodes_the_chart_does_not_allow_are_refused_before_any_change(
        cluster, chart, monkeypatch, caplog):
    system, ns = chart["system"], chart["allowed"]
    assert json.loads(chart["chart_env"]["ELVES_RUNNER_ENV_SECRETS"]) == {ns: ["k6-hosts"]}
    before = template_of(cluster, system)
    spec = {"reset": True, "load": LOAD, "runner": {
        "envFromSecrets": ["k6-hosts", "db-admin"], "nodeSelector": {"pool": "system"},
        "tolerations": [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists"}]}}
    with operator(monkeypatch, caplog, None, chart["settings"]) as runner:
        cluster.create_loadtest(ns, "nosy", spec)
        status = wait_for(phase_is(cluster, ns, "nosy", "Error"), "the Error phase")
        message = harness_error(status)["message"]
        assert message.startswith("spec.runner.envFromSecrets[1]: Secret db-admin is not one the runners"), message
        assert "; spec.runner.nodeSelector.pool: pool=system is not a node label" in message
        assert "; spec.runner.tolerations[0]: " in message and "k6-hosts" in message
        assert template_of(cluster, system) == before and cluster.lock_holder(system) == ""
        assert cluster.testrun(ns, "elves-nosy-0") is None
    assert runner.exit_code == 0
    assert runner.exception is None


def an_old_report(cluster: Cluster, namespace: str, loadtest: str, day: int) -> str:
    name = f"elves-{loadtest}-report-2026010{day}-000000"
    cluster.core.create_namespaced_config_map(namespace, {"metadata": {
        "name": name, "labels": {names.LABEL_REPORT: "true", names.LABEL_LOADTEST: loadtest},
        "annotations": {names.ANNOTATION_FINISHED_AT: f"2026-01-0{day}T00:00:00+00:00"}},
        "data": {"summary.json": "{}"}})
    return name


def reports_of(cluster: Cluster, namespace: str, loadtest: str) -> list[str]:
    listed = cluster.core.list_namespaced_config_map(
        namespace, label_selector=f"{names.LABEL_REPORT}=true,{names.LABEL_LOADTEST}={loadtest}")
    return sorted(c.metadata.name for c in listed.items)


def test_old_reports_are_pruned_with_the_permissions_the_chart_grants(cluster, chart, monkeypatch, caplog):
    ns, name = chart["allowed"], "pruned"
    old = [an_old_report(cluster, ns, name, day) for day in (1, 2)]
    other = an_old_report(cluster, ns, "someone-else", 1)
    # A run that ends soon after it took the system (its script is missing), and leaves a report.
    spec = {"load": {"script": {"configMap": {"name": "nope", "file": "s.js"}}, "rate": "60/min", "duration": "1m"}}
    with operator(monkeypatch, caplog, None, {**chart["settings"], "ELVES_REPORTS_KEPT": "2"}) as runner:
        cluster.create_loadtest(ns, name, spec)
        status = wait_for(phase_is(cluster, ns, name, "Error"), "the Error phase")
        assert "spec.load.script.configMap: ConfigMap nope not found" in harness_error(status)["message"]
        kept = wait_for(lambda: cluster.status(ns, name).get("report", {}).get("path"), "the report")
        newest = kept.removeprefix("configmap/")
        assert wait_for(lambda: reports_of(cluster, ns, name) == sorted([newest, old[1]]),
                        "the oldest report to be pruned")
        pruned = wait_for(lambda: events_with(cluster, ns, name, "ReportsPruned"), "the ReportsPruned event")
        assert pruned == [f"kept the newest 2 reports of {name}; deleted {old[0]}"]
        assert reports_of(cluster, ns, "someone-else") == [other]  # another LoadTest's history stays
    assert runner.exit_code == 0
    assert runner.exception is None


class DiesBeforeSaving(Kube):
    """The operator killed after a step changed the system, before it wrote the status."""

    def replace_loadtest_status(self, body: dict[str, Any]) -> dict[str, Any]:
        raise SystemExit("the operator's pod was killed")


def a_driver(settings: dict[str, str], kube_class: type[Kube] = Kube) -> Driver:
    api = config.new_client_from_config(config_file=settings["KUBECONFIG"])
    return Driver(OperatorSettings.from_env(settings), kube_class(api))


def no_events(*_: str) -> None:
    pass


def tick_until(driver: Driver, cluster: Cluster, ns: str, name: str, done, what: str) -> dict[str, Any]:
    def ticked():
        driver.tick(ns, name, no_events)
        return done(cluster.status(ns, name)) and cluster.status(ns, name)
    return wait_for(ticked, what)


def test_a_crash_between_the_snapshot_and_the_change_restores_the_original_system(cluster, chart):
    system, ns, name = chart["system"], chart["allowed"], "crashed"
    cluster.create_loadtest(ns, name, {"system": {"replicas": {"ingestor": 3}}, "load": LOAD})
    status = tick_until(a_driver(chart["settings"]), cluster, ns, name, lambda s: "snapshot" in s,
                        "the snapshot in the status")
    # The snapshot is saved, and nothing is changed yet.
    assert status["progress"]["step"] == "prepare"
    assert status["snapshot"]["deployments"]["ingestor"]["replicas"] == 1
    assert cluster.deployment(system, "ingestor")["spec"]["replicas"] == 1

    with pytest.raises(SystemExit):
        a_driver(chart["settings"], DiesBeforeSaving).tick(ns, name, no_events)
    assert cluster.deployment(system, "ingestor")["spec"]["replicas"] == 3  # changed, and not saved
    assert cluster.status(ns, name)["progress"]["step"] == "prepare"

    restarted = a_driver(chart["settings"])
    tick_until(restarted, cluster, ns, name, lambda s: s["phase"] == "Preparing", "the test to go on")
    restarted.delete(ns, name, no_events)  # what kopf's delete handler calls
    assert cluster.deployment(system, "ingestor")["spec"]["replicas"] == 1
    assert cluster.lock_holder(system) == ""
    cluster.delete_loadtest(ns, name)


def test_restored_true_written_into_the_status_does_not_skip_the_restore(cluster, chart):
    system, ns, name = chart["system"], chart["allowed"], "liar"
    cluster.create_loadtest(ns, name, {"system": {"replicas": {"ingestor": 4}}, "load": LOAD})
    driver = a_driver(chart["settings"])
    tick_until(driver, cluster, ns, name, lambda s: s.get("progress", {}).get("step") == "wait-ready",
               "the change to be made")
    assert cluster.deployment(system, "ingestor")["spec"]["replicas"] == 4
    # Whoever may patch the status says the system was put back already.
    cluster.custom.patch_namespaced_custom_object_status(API_GROUP, API_VERSION, ns, PLURAL, name,
                                                         {"status": {"restored": True}}, _content_type=MERGE_PATCH)
    driver.delete(ns, name, no_events)
    assert cluster.deployment(system, "ingestor")["spec"]["replicas"] == 1
    cluster.delete_loadtest(ns, name)


def test_a_deleted_loadtest_stays_until_its_system_is_restored_or_it_says_to_skip(
        cluster, chart, monkeypatch, caplog):
    system, ns, name = chart["system"], chart["allowed"], "stuck"
    with operator(monkeypatch, caplog, None, chart["settings"]) as runner:
        cluster.create_loadtest(ns, name, {"system": {"replicas": {"ingestor": 2}}, "load": LOAD})
        wait_for(lambda: cluster.deployment(system, "ingestor")["spec"]["replicas"] == 2, "the change")
        # The chart is uninstalled under the test: its Secret, which the seal is checked with, is gone.
        cluster.core.delete_namespaced_secret("elves", system)
        cluster.delete_loadtest(ns, name)
        failed = wait_for(lambda: len(events_with(cluster, ns, name, "RestoreFailed")) >= 2 and
                          events_with(cluster, ns, name, "RestoreFailed"), "the restore to be tried again",
                          timeout=60)
        assert "kubectl annotate loadtest stuck" in failed[0] and "elves.dev/skip-restore=true" in failed[0]
        assert cluster.loadtest(ns, name) is not None  # the finalizer holds it
        cluster.custom.patch_namespaced_custom_object(API_GROUP, API_VERSION, ns, PLURAL, name, {
            "metadata": {"annotations": {"elves.dev/skip-restore": "true"}}}, _content_type=MERGE_PATCH)
        wait_for(lambda: cluster.loadtest(ns, name) is None, "the LoadTest to go once it says to skip", timeout=60)
        assert wait_for(lambda: events_with(cluster, ns, name, "RestoreSkipped"), "the RestoreSkipped event")
        # kopf logs each failed try of the delete handler; those, and only those, were expected.
        unexpected = [r.getMessage() for r in caplog.records
                      if r.levelno >= logging.ERROR and "could not be restored" not in r.getMessage()]
        assert unexpected == []
        caplog.clear()
    assert runner.exit_code == 0
    assert runner.exception is None
