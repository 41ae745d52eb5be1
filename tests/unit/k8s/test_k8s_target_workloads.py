"""Faults on another system's workloads (elves.k8s.target_workloads): the API calls each makes,
on the workloads its SystemUnderTest lists by name only, in its namespace; the snapshot and the
restore of their replicas (those a selector chooses too); whether they are all ready. The calls
against a real API server: tests/apiserver/test_operator_foreign_target.py."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from elves.engine.models.faults import KillPodFault, PauseFault, RestartFault, ScaleFault
from elves.engine.models.status import WorkloadSnapshot
from elves.engine.models.target import parse_system_under_test
from elves.engine.planning.platform import Readiness
from elves.engine.planning.target import Target
from elves.k8s.names import Owner
from elves.k8s.platform import KubernetesPlatform
from elves.k8s.settings import OperatorSettings
from elves.k8s.target_workloads import TargetFaults, TargetWorkloadError, TargetWorkloads, restore
from elves.k8s.target_workloads import not_ready as target_not_ready

NS = "shop"


def workload(name: str, replicas: int, selector: dict | None = None, labels: dict | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": NS, "labels": labels or {"app": name}, "generation": 1},
            "spec": {"replicas": replicas, "selector": selector or {"matchLabels": {"app": name}}}}


def rolled_out(body: dict[str, Any], ready: int | None = None) -> dict[str, Any]:
    """`body` with the status its controller writes once the change is out: every replica updated,
    `ready` of them ready (all by default)."""
    wanted = body["spec"]["replicas"]
    body["status"] = {"observedGeneration": body["metadata"]["generation"], "replicas": wanted,
                      "updatedReplicas": wanted, "readyReplicas": wanted if ready is None else ready}
    return body


def pod(name: str, phase: str = "Running", going: bool = False) -> dict[str, Any]:
    meta = {"name": name, **({"deletionTimestamp": "2026-11-27T00:00:00Z"} if going else {})}
    return {"metadata": meta, "status": {"phase": phase}}


class WorkloadsKube:
    """The API as TargetFaults uses it: Deployments and StatefulSets by name, pods by selector."""

    def __init__(self) -> None:
        self.deployments = {"orders-api": workload("orders-api", 2), "orders-worker": workload("orders-worker", 3)}
        self.statefulsets = {"orders-db": workload("orders-db", 1)}
        # Chosen by the SystemUnderTest's selector app=shop, not by name.
        self.deployments["orders-cache"] = workload("orders-cache", 2, labels={"app": "shop", "tier": "cache"})
        self.pod_lists = {"app=orders-worker": [pod("orders-worker-b", going=True), pod("orders-worker-a")]}
        self.calls: list[tuple] = []

    def deployment(self, namespace: str, name: str) -> dict | None:
        assert namespace == NS
        return copy.deepcopy(self.deployments.get(name))

    def statefulset(self, namespace: str, name: str) -> dict | None:
        assert namespace == NS
        return copy.deepcopy(self.statefulsets.get(name))

    @staticmethod
    def _labelled(bodies: dict[str, dict], selector: str) -> list[dict]:
        wanted = dict(pair.split("=", 1) for pair in selector.split(","))
        return [copy.deepcopy(b) for b in bodies.values() if wanted.items() <= b["metadata"]["labels"].items()]

    def list_deployments(self, namespace: str, selector: str) -> list[dict]:
        assert namespace == NS
        return self._labelled(self.deployments, selector)

    def list_statefulsets(self, namespace: str, selector: str) -> list[dict]:
        assert namespace == NS
        return self._labelled(self.statefulsets, selector)

    def pods(self, namespace: str, selector: str) -> list[dict]:
        return copy.deepcopy(self.pod_lists.get(selector, []))

    def __getattr__(self, name: str):  # every write is recorded
        if name.startswith(("scale_", "patch_", "delete_")):
            return lambda *args, **kwargs: self.calls.append((name, *args, *kwargs.values()))
        raise AttributeError(name)


@pytest.fixture
def kube() -> WorkloadsKube:
    return WorkloadsKube()


ORDERS = parse_system_under_test({
        "apiVersion": "elves.dev/v1alpha1", "kind": "SystemUnderTest", "metadata": {"name": "orders"},
        "spec": {"workloads": [{"name": "orders-api"}, {"name": "orders-worker"},
                               {"name": "orders-db", "kind": "StatefulSet"}, {"name": "orders-gone"},
                               {"selector": {"matchLabels": {"app": "shop"}}}],
                 "queues": {"rabbitmq": ["orders.in"]}, "ledger": {"registry": {}}}}).spec


def target(kube: WorkloadsKube) -> TargetFaults:
    return TargetFaults(kube, TargetWorkloads.of(NS, ORDERS), clock=lambda: 1_800_000_000.0)  # type: ignore[arg-type]


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
                        "orders-cache": WorkloadSnapshot(kind="Deployment", replicas=2),  # by its labels
                        "orders-db": WorkloadSnapshot(kind="StatefulSet", replicas=1),
                        "orders-worker": WorkloadSnapshot(kind="Deployment", replicas=3)}  # orders-gone: none
    kube.deployments["orders-api"]["spec"]["replicas"] = 0
    kube.statefulsets["orders-db"]["spec"]["replicas"] = 4
    del kube.deployments["orders-worker"]  # gone since: left gone
    restore(kube, NS, snapshot)  # type: ignore[arg-type]
    assert kube.calls == [("scale_deployment", NS, "orders-api", 2), ("scale_statefulset", NS, "orders-db", 1)]


# --- readiness ----------------------------------------------------------------------------------

def ready_kube() -> WorkloadsKube:
    """Every workload rolled out and ready; orders-gone (listed by name) made to exist."""
    kube = WorkloadsKube()
    kube.deployments["orders-gone"] = workload("orders-gone", 1)
    for body in (*kube.deployments.values(), *kube.statefulsets.values()):
        rolled_out(body)
    return kube


def not_ready(kube: WorkloadsKube) -> list[str]:
    return target_not_ready(kube, target(kube).target)  # type: ignore[arg-type]


def test_the_target_is_ready_when_every_workload_it_lists_by_name_or_labels_is():
    assert not_ready(ready_kube()) == []


def test_each_workload_not_ready_is_named_with_its_kind_and_why():
    kube = ready_kube()
    rolled_out(kube.deployments["orders-worker"], ready=1)  # a killed pod's successor starting
    rolled_out(kube.statefulsets["orders-db"], ready=0)
    kube.deployments["orders-cache"]["metadata"]["generation"] = 2  # chosen by labels, a change not yet out
    assert not_ready(kube) == [
        "Deployment orders-cache: the change is not rolled out yet (generation 2, observed 1)",
        "StatefulSet orders-db: 0 of 1 replicas ready",
        "Deployment orders-worker: 1 of 3 replicas ready"]


def test_a_statefulset_rolling_out_is_not_ready_though_its_old_replicas_are():
    kube = ready_kube()
    kube.statefulsets["orders-db"]["status"]["updatedReplicas"] = 0  # a rollout restart under way
    assert not_ready(kube) == ["StatefulSet orders-db: 0 of 1 replicas updated"]


def test_a_workload_missing_by_name_or_a_selector_choosing_none_is_not_ready():
    kube = ready_kube()
    del kube.deployments["orders-gone"], kube.deployments["orders-cache"]
    assert not_ready(kube) == [f"Deployment orders-gone not found in namespace {NS}",
                               f"no Deployment in namespace {NS} has the labels app=shop"]


def a_platform(kube: WorkloadsKube, target_namespaces: tuple[str, ...]) -> KubernetesPlatform:
    platform = KubernetesPlatform(OperatorSettings(target_namespaces=target_namespaces), kube,  # type: ignore[arg-type]
                                  Owner(NS, "orders-kill", "u"), clock=lambda: 0.0)
    platform.target = Target.other(NS, ORDERS)
    return platform


def test_the_platform_waits_for_the_targets_workloads_where_the_chart_lets_it_read_them():
    kube = ready_kube()
    rolled_out(kube.deployments["orders-worker"], ready=2)
    assert a_platform(kube, (NS,)).system_ready() == Readiness(False, "Deployment orders-worker: 2 of 3 replicas ready")
    # Outside operator.targetNamespaces the operator may not read them (no Role there): it waits
    # for none, as before, rather than fail on a read it was never granted.
    kube.deployment = kube.statefulset = kube.list_deployments = kube.list_statefulsets = None  # type: ignore[assignment]
    assert a_platform(kube, ("elsewhere",)).system_ready() == Readiness(True)


def test_elves_own_system_is_awaited_by_the_same_rule_in_the_same_words():
    """Elves' own Deployments read as another system's workloads are (before the load and in the
    drain), with the chart's broker and database StatefulSets where it runs them: an absent one is
    an external broker or database, not a missing workload."""
    kube = WorkloadsKube()
    kube.deployments = {name: rolled_out(workload(name, 1)) for name in ("gateway", "registry", "ingestor")}
    kube.statefulsets = {"rabbitmq": rolled_out(workload("rabbitmq", 1), ready=0)}  # PostgreSQL external
    rolled_out(kube.deployments["gateway"], ready=0)  # its container killed late in the load
    platform = KubernetesPlatform(OperatorSettings(system_namespace=NS), kube,  # type: ignore[arg-type]
                                  Owner(NS, "quick", "u"), clock=lambda: 0.0)
    platform.target = Target.elves(NS)
    assert platform.system_ready() == Readiness(
        False, "Deployment gateway: 0 of 1 replicas ready; StatefulSet rabbitmq: 0 of 1 replicas ready")
    del kube.deployments["ingestor"]
    rolled_out(kube.deployments["gateway"]), rolled_out(kube.statefulsets["rabbitmq"])
    assert platform.system_ready() == Readiness(False, f"Deployment ingestor not found in namespace {NS}")
