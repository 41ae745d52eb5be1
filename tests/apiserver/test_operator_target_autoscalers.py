"""Autoscaling of another system's workloads against a real API server (tier 3), under the chart's
own RBAC for the operator with operator.targetNamespaces (chart_rbac.py) and KEDA's CRDs
(control_plane.py): the operator gives the team's own ScaledObject (by the name its
SystemUnderTest gives) the run's settings, creates an HPA where none was, pauses the
ScaledObject for mode: fixed, and the restore puts back exactly what the team had and removes
what it made. A LoadTest asking to autoscale a workload the SystemUnderTest describes no
autoscaler for ends in Error before it takes the system, naming the field and what is on offer.

What a user would notice if these broke: the team's autoscaler left with a LoadTest's settings
(or a stray HPA left behind) after the test, an operator the API server forbids halfway, or a
typo in a workload's name accepted and acting on nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from foreign_system import foreign_system
from kubernetes import config

from elves.constants import API_GROUP, API_VERSION, SUT_PLURAL
from elves.engine.models.loadtest import parse_loadtest
from elves.engine.models.status import SystemSnapshot
from elves.engine.models.target import parse_system_under_test
from elves.engine.planning.target import Target
from elves.k8s.autoscalers import HPA, PAUSED, SCALED_OBJECT, Kind
from elves.k8s.kube import Kube
from elves.k8s.names import Owner
from elves.k8s.platform import KubernetesPlatform, LoadError
from elves.k8s.settings import OperatorSettings

from . import control_plane as cp
from .chart_rbac import install_operator_rbac
from .test_operator_autoscalers import kept
from .test_operator_autoscalers import read as read_in
from .test_operator_kit import Cluster
from .test_operator_loadtests import CRD_FILE
from .test_operator_reliability import a_driver, harness_error, tick_until

SYSTEM, TEAM = "target-autoscale-system", "target-autoscale-team"
SUT_CRD_FILE = cp.REPO / "charts" / "elves" / "crds" / "systemundertests.elves.dev.yaml"
WORKLOADS = [
    {"name": "orders-api", "autoscaler": {"cpu": {}}},
    {"name": "orders-worker", "autoscaler": {"name": "orders-worker-scaler", "rabbitmq": {
        "queue": "orders.in", "authenticationRef": "orders-rabbitmq"}}},
    {"name": "orders-audit"},
]
# The team's own ScaledObject, as they installed it (their labels, their settings).
TEAMS = {"labels": {"app.kubernetes.io/managed-by": "orders-team"}, "annotations": {"orders/owner": "shop"}}
TEAMS_SPEC = {"scaleTargetRef": {"name": "orders-worker"}, "minReplicaCount": 1, "maxReplicaCount": 2,
              "triggers": [{"type": "rabbitmq", "metadata": {"queueName": "orders.in", "mode": "QueueLength",
                                                              "value": "100"},
                            "authenticationRef": {"name": "orders-rabbitmq"}}]}


@pytest.fixture(scope="module")
def rbac(control_plane: cp.ControlPlane, kubeconfig: Path, tmp_path_factory: pytest.TempPathFactory):
    """(the admin's Cluster, the operator's kubeconfig under the chart's RBAC for release namespace
    SYSTEM with operator.targetNamespaces and loadTestNamespaces [TEAM], the chart's environment)."""
    admin = Cluster(kubeconfig)
    admin.system(SYSTEM)
    admin.namespace(TEAM)
    for name in ("orders-api", "orders-worker", "orders-audit"):
        labels = {"app": name}
        admin.apps.create_namespaced_deployment(TEAM, {"metadata": {"name": name}, "spec": {
            "replicas": 1, "selector": {"matchLabels": labels}, "template": {
                "metadata": {"labels": labels}, "spec": {"containers": [{"name": "app", "image": "shop:test"}]}}}})
    operator_kubeconfig, chart_env = install_operator_rbac(
        control_plane, SYSTEM, {"operator": {"targetNamespaces": [TEAM], "loadTestNamespaces": [TEAM]}},
        tmp_path_factory.mktemp("target-autoscale"))
    return admin, operator_kubeconfig, chart_env


def read(admin: Cluster, kind: Kind, name: str) -> dict[str, Any] | None:
    return read_in(admin, kind, name, TEAM)


def system_of(autoscaling: dict[str, Any]):
    return parse_loadtest({"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest", "metadata": {"name": "t"},
                           "spec": {"target": {"systemUnderTest": "orders"},
                                    "load": {"script": {"configMap": {"name": "s", "file": "s.js"}},
                                             "rate": "60/min", "duration": "1m"},
                                    "system": {"autoscaling": autoscaling}}}).spec.system


def test_the_teams_autoscalers_are_applied_and_put_back_with_the_charts_rbac(rbac):
    admin, operator_kubeconfig, _ = rbac
    kube = Kube(config.new_client_from_config(config_file=str(operator_kubeconfig)))
    kind = SCALED_OBJECT
    admin.custom.create_namespaced_custom_object(kind.group, kind.version, TEAM, kind.plural, {
        "apiVersion": kind.api_version, "kind": kind.kind, "metadata": {"name": "orders-worker-scaler", **TEAMS},
        "spec": TEAMS_SPEC})
    teams = kept(read(admin, SCALED_OBJECT, "orders-worker-scaler"))
    platform = KubernetesPlatform(OperatorSettings(system_namespace=SYSTEM, target_namespaces=(TEAM,)), kube,
                                  Owner(TEAM, "orders-autoscaled", "uid-1"))
    platform.target = Target.other(TEAM, parse_system_under_test(foreign_system(workloads=WORKLOADS)).spec)
    # As the status keeps it (JSON), and as someone who may write the status could change it.
    snapshot = SystemSnapshot.model_validate(platform.snapshot_system().model_dump(mode="json", by_alias=True))
    tampered = snapshot.model_copy(deep=True)
    tampered.workload_autoscalers["orders-worker"].before.spec["maxReplicaCount"] = 100
    assert {w: (s.kind, s.name, s.before is not None) for w, s in snapshot.workload_autoscalers.items()} == {
        "orders-api": ("HorizontalPodAutoscaler", "orders-api", False),
        "orders-worker": ("ScaledObject", "orders-worker-scaler", True)}

    platform.apply_system(system_of({"orders-worker": {"maxReplicas": 4, "messagesPerReplica": 10},
                                     "orders-api": {"maxReplicas": 3, "cpuUtilization": 60}}))
    scaled = read(admin, SCALED_OBJECT, "orders-worker-scaler")
    assert scaled["metadata"]["labels"] == TEAMS["labels"], "the team's object, patched"
    assert scaled["spec"]["maxReplicaCount"] == 4
    assert scaled["spec"]["triggers"][0]["metadata"]["value"] == "10"
    assert "host" not in scaled["spec"]["triggers"][0]["metadata"], "KEDA reads it from the team's TriggerAuthentication"
    made = read(admin, HPA, "orders-api")
    assert made["metadata"]["labels"]["elves.dev/loadtest"] == "orders-autoscaled"
    assert (made["spec"]["maxReplicas"], made["spec"]["scaleTargetRef"]["name"]) == (3, "orders-api")

    # The next run of a sweep: the system put back, then mode: fixed pauses KEDA.
    platform.restore_system(snapshot)
    platform.apply_system(system_of({"orders-worker": {"mode": "fixed"}}))
    assert read(admin, SCALED_OBJECT, "orders-worker-scaler")["metadata"]["annotations"][PAUSED] == "true"

    with pytest.raises(LoadError, match="not what the operator recorded"):
        platform.restore_system(tampered)
    platform.restore_system(snapshot)
    assert kept(read(admin, SCALED_OBJECT, "orders-worker-scaler")) == teams
    assert read(admin, HPA, "orders-api") is None


def test_a_workload_without_an_autoscaler_is_refused_naming_the_field(rbac, control_plane):
    admin, operator_kubeconfig, chart_env = rbac
    control_plane.install_crds(CRD_FILE)
    control_plane.install_crds(SUT_CRD_FILE)
    admin.custom.create_namespaced_custom_object(API_GROUP, API_VERSION, TEAM, SUT_PLURAL,
                                                 foreign_system("orders", TEAM, workloads=WORKLOADS))
    settings = {"KUBECONFIG": str(operator_kubeconfig), "ELVES_SYSTEM_NAMESPACE": SYSTEM, "ELVES_SECRET_NAME": "elves",
                "ELVES_LOADTEST_NAMESPACES": chart_env["ELVES_LOADTEST_NAMESPACES"],
                "ELVES_TARGET_NAMESPACES": TEAM}
    before = {name: kept(read(admin, HPA, name)) for name in ("orders-api", "orders-audit")}
    admin.create_loadtest(TEAM, "wants-audit-scaled", {
        "target": {"systemUnderTest": "orders"},
        "load": {"script": {"configMap": {"name": "s", "file": "s.js"}}, "rate": "60/min", "duration": "1m"},
        "system": {"autoscaling": {"orders-audit": {"maxReplicas": 3}, "orders-api": {"maxReplicas": 3}}}})
    # The API server keeps another system's workload as written (the CRD cannot know its name).
    stored = admin.custom.get_namespaced_custom_object(API_GROUP, API_VERSION, TEAM, "loadtests", "wants-audit-scaled")
    assert stored["spec"]["system"]["autoscaling"]["orders-audit"] == {"maxReplicas": 3}
    status = tick_until(a_driver(settings), admin, TEAM, "wants-audit-scaled", lambda s: s.get("phase") == "Error",
                        "the Error phase")
    error = harness_error(status)
    assert error["reason"] == "InvalidSpec"
    assert ("spec.system.autoscaling.orders-audit: 'orders-audit' is not a workload SystemUnderTest"
            f" {TEAM}/orders describes an autoscaler for (it describes one for orders-api, orders-worker)"
            in error["message"]), error["message"]
    assert "snapshot" not in status
    assert {name: kept(read(admin, HPA, name)) for name in ("orders-api", "orders-audit")} == before
    admin.delete_loadtest(TEAM, "wants-audit-scaled")
