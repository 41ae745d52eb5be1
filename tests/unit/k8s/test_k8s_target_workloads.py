"""Faults on another system's workloads (elves.k8s.target_workloads): the API calls each makes,
on the workloads its SystemUnderTest lists by name only, in its namespace; the snapshot and the
restore of their replicas. The calls against a real API server: tests/apiserver/
test_operator_foreign_target.py."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from elves.engine.models.faults import KillPodFault, PauseFault, RestartFault, ScaleFault
from elves.engine.models.status import WorkloadSnapshot
from elves.engine.models.target import parse_system_under_test
from elves.k8s.target_workloads import TargetFaults, TargetWorkloadError, TargetWorkloads, restore

NS = "shop"


def workload(name: str, replicas: int, selector: dict | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": NS},
            "spec": {"replicas": replicas, "selector": selector or {"matchLabels": {"app": name}}}}


def pod(name: str, phase: str = "Running", going: bool = False) -> dict[str, Any]:
    meta = {"name": name, **({"deletionTimestamp": "2026-11-27T00:00:00Z"} if going else {})}
    return {"metadata": meta, "status": {"phase": phase}}


class WorkloadsKube:
    """The API as TargetFaults uses it: Deployments and StatefulSets by name, pods by selector."""

    def __init__(self) -> None:
        self.deployments = {"orders-api": workload("orders-api", 2), "orders-worker": workload("orders-worker", 3)}
        self.statefulsets = {"orders-db": workload("orders-db", 1)}
        self.pod_lists = {"app=orders-worker": [pod("orders-worker-b", going=True), pod("orders-worker-a")]}
        self.calls: list[tuple] = []

    def deployment(self, namespace: str, name: str) -> dict | None:
        assert namespace == NS
        return copy.deepcopy(self.deployments.get(name))

    def statefulset(self, namespace: str, name: str) -> dict | None:
        assert namespace == NS
        return copy.deepcopy(self.statefulsets.get(name))

    def pods(self, namespace: str, selector: str) -> list[dict]:
        return copy.deepcopy(self.pod_lists.get(selector, []))

    def __getattr__(self, name: str):  # every write is recorded
        if name.startswith(("scale_", "patch_", "delete_")):
            return lambda *args, **kwargs: self.calls.append((name, *args, *kwargs.values()))
        raise AttributeError(name)


@pytest.fixture
def kube() -> WorkloadsKube:
    return WorkloadsKube()


def target(kube: WorkloadsKube) -> TargetFaults:
    orders = parse_system_under_test({
        "apiVersion": "elves.dev/v1alpha1", "kind": "SystemUnderTest", "metadata": {"name": "orders"},
        "spec": {"workloads": [{"name": "orders-api"}, {"name": "orders-worker"},
                               {"name": "orders-db", "kind": "StatefulSet"}, {"name": "orders-gone"},
                               {"selector": {"matchLabels": {"app": "shop"}}}],
                 "queues": {"rabbitmq": ["orders.in"]}, "ledger": {"registry": {}}}}).spec
    return TargetFaults(kube, TargetWorkloads.of(NS, orders), clock=lambda: 1_800_000_000.0)  # type: ignore[arg-type]


def test_the_listed_workloads_by_name_are_what_faults_may_touch(kube):
    assert target(kube).target.kinds == {"orders-api": "Deployment", "orders-worker": "Deployment",
                                         "orders-db": "StatefulSet", "orders-gone": "Deployment"}


def test_kill_deletes_one_running_pod_at_once(kube):
    applied = target(kube).apply(KillPodFault(workload="orders-worker"), 0.0)
    assert kube.calls == [("delete_pod", NS, "orders-worker-a", 0)]  # not the one already going
    assert applied.message == (f"deleted pod orders-worker-a of Deployment orders-worker in namespace {NS} at once; its"
                               " controller starts another")
    assert applied.watch is None


def test_scale_and_restart_use_the_workloads_own_kind(kube):
    faults = target(kube)
    assert faults.apply(ScaleFault(workload="orders-db", replicas=0), 0.0).message == \
        f"scaled StatefulSet orders-db in namespace {NS} from 1 to 0 replicas"
    faults.apply(RestartFault(workload="orders-api"), 0.0)
    assert kube.calls[0] == ("scale_statefulset", NS, "orders-db", 0)
    assert kube.calls[1] == ("patch_deployment", NS, "orders-api",
                             {"spec": {"template": {"metadata": {"annotations": {
                                 "kubectl.kubernetes.io/restartedAt": "2027-01-15T08:00:00Z"}}}}})


@pytest.mark.parametrize("action, says", [
    (KillPodFault(workload="orders-api"), f"no running pod of Deployment orders-api in namespace {NS} to kill"),
    (ScaleFault(workload="orders-gone", replicas=1), f"Deployment orders-gone not found in namespace {NS}"),
    (RestartFault(workload="billing"), "billing is not a workload the SystemUnderTest lists by name"),
    (PauseFault(deployment="gateway", **{"for": "1s"}), "fault action 'pause' cannot act on another system's workload"),
])
def test_what_cannot_be_done_is_said_and_nothing_changes(kube, action, says):
    if isinstance(action, PauseFault):
        object.__setattr__(action, "workload", "orders-api")  # the platform routes by this field
    with pytest.raises(TargetWorkloadError, match=says):
        target(kube).apply(action, 0.0)
    assert kube.calls == []


def test_a_selector_of_expressions_cannot_be_killed_into(kube):
    kube.deployments["orders-api"] = workload("orders-api", 2, {"matchExpressions": [
        {"key": "app", "operator": "In", "values": ["orders-api"]}]})
    with pytest.raises(TargetWorkloadError, match="selects its pods by matchExpressions"):
        target(kube).apply(KillPodFault(workload="orders-api"), 0.0)


def test_the_snapshot_holds_each_listed_workloads_replicas_and_the_restore_puts_back_what_changed(kube):
    snapshot = target(kube).snapshot()
    assert snapshot == {"orders-api": WorkloadSnapshot(kind="Deployment", replicas=2),
                        "orders-db": WorkloadSnapshot(kind="StatefulSet", replicas=1),
                        "orders-worker": WorkloadSnapshot(kind="Deployment", replicas=3)}  # orders-gone: none
    kube.deployments["orders-api"]["spec"]["replicas"] = 0
    kube.statefulsets["orders-db"]["spec"]["replicas"] = 4
    del kube.deployments["orders-worker"]  # gone since: left gone
    restore(kube, NS, snapshot)  # type: ignore[arg-type]
    assert kube.calls == [("scale_deployment", NS, "orders-api", 2), ("scale_statefulset", NS, "orders-db", 1)]
