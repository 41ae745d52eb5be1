"""A run's autoscalers against a real API server, under the chart's own RBAC for the operator
(chart_rbac.py) and KEDA's CRDs (control_plane.py): the operator patches the chart's
ScaledObject, deletes the chart's HPA for mode: fixed, creates one where none was, pauses the
ScaledObject for mode: fixed, and the restore puts back exactly what was there and removes
what it made. The same credentials reach no autoscaler outside the system's namespace or by
another name, and list none.

What a user would notice if these broke: an operator the API server forbids a LoadTest's
autoscaling halfway (or one allowed to rewrite any team's autoscalers), or the chart's
autoscalers left changed or missing after a test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kubernetes import config
from kubernetes.client.exceptions import ApiException

from elves.engine.models.autoscaling import CpuAutoscaling, QueueAutoscaling
from elves.engine.models.loadtest import parse_loadtest
from elves.k8s.autoscalers import HPA, PAUSED, SCALED_OBJECT, Keda, Kind, spec_of
from elves.k8s.kube import Kube
from elves.k8s.names import Owner
from elves.k8s.platform import KubernetesPlatform
from elves.k8s.settings import OperatorSettings

from . import control_plane as cp
from .chart_rbac import install_operator_rbac
from .test_operator_kit import Cluster
from .test_operator_loadtests import CRD_FILE
from .test_operator_reliability import a_driver, harness_error, tick_until

SYSTEM, OTHER = "autoscale-system", "autoscale-other"
KEDA = Keda(trigger_authentication="elves-keda-rabbitmq", rabbitmq_host=f"amqp://rabbitmq.{SYSTEM}.svc:5672")
HELM = {"labels": {"app.kubernetes.io/managed-by": "Helm"},
        "annotations": {"meta.helm.sh/release-name": "elves", "meta.helm.sh/release-namespace": SYSTEM}}
# The chart's autoscalers at its default settings (their shape: tests/unit/chart/test_chart_autoscaling.py).
CHART_SCALED_OBJECT = spec_of("ingestor", QueueAutoscaling(), KEDA)
CHART_HPA = spec_of("gateway", CpuAutoscaling(), KEDA)


@pytest.fixture(scope="module")
def rbac(control_plane: cp.ControlPlane, kubeconfig: Path, tmp_path_factory: pytest.TempPathFactory):
    """(the admin's Cluster, the operator's kubeconfig under the chart's RBAC for release namespace
    SYSTEM, the environment the chart gives the operator: rendered without KEDA's API)."""
    admin = Cluster(kubeconfig)
    admin.system(SYSTEM)
    admin.namespace(OTHER)
    operator_kubeconfig, chart_env = install_operator_rbac(control_plane, SYSTEM, {},
                                                           tmp_path_factory.mktemp("autoscale"))
    return admin, operator_kubeconfig, chart_env


@pytest.fixture(scope="module")
def operator_kube(rbac):
    """(the admin's Cluster, the operator's Kube under the chart's RBAC)."""
    admin, operator_kubeconfig, _ = rbac
    return admin, Kube(config.new_client_from_config(config_file=str(operator_kubeconfig)))


def read(admin: Cluster, kind: Kind, name: str, namespace: str = SYSTEM) -> dict[str, Any] | None:
    try:
        return admin.custom.get_namespaced_custom_object(kind.group, kind.version, namespace, kind.plural, name)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def kept(obj: dict[str, Any] | None) -> Any:
    """What a restore must put back: labels, annotations, spec."""
    return obj and (obj["metadata"].get("labels"), obj["metadata"].get("annotations"), obj["spec"])


def system_of(autoscaling: dict[str, Any]):
    return parse_loadtest({"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest", "metadata": {"name": "t"},
                           "spec": {"load": {"scenario": "system-mix", "rate": "60/min", "duration": "1m"},
                                    "system": {"autoscaling": autoscaling}}}).spec.system


def test_the_operator_applies_and_restores_autoscalers_with_the_charts_rbac(operator_kube):
    admin, kube = operator_kube
    for kind, name, spec in ((SCALED_OBJECT, "ingestor", CHART_SCALED_OBJECT), (HPA, "gateway", CHART_HPA)):
        admin.custom.create_namespaced_custom_object(kind.group, kind.version, SYSTEM, kind.plural, {
            "apiVersion": kind.api_version, "kind": kind.kind, "metadata": {"name": name, **HELM}, "spec": spec})
    charts = {name: kept(read(admin, kind, name)) for kind, name in ((SCALED_OBJECT, "ingestor"), (HPA, "gateway"))}
    platform = KubernetesPlatform(OperatorSettings(system_namespace=SYSTEM, keda=KEDA), kube,
                                  Owner("team", "autoscaled", "uid-1"))
    snapshot = platform.snapshot_system()

    platform.apply_system(system_of({"ingestor": {"mode": "keda", "messagesPerReplica": 50},
                                     "gateway": {"mode": "fixed"}, "registry": {"mode": "hpa", "maxReplicas": 3}}))
    scaled = read(admin, SCALED_OBJECT, "ingestor")
    assert scaled["spec"]["triggers"][0]["metadata"]["value"] == "50"
    assert scaled["metadata"]["labels"] == HELM["labels"], "the chart's object, patched"
    assert read(admin, HPA, "gateway") is None
    made = read(admin, HPA, "registry")
    assert made["metadata"]["labels"]["elves.dev/loadtest"] == "autoscaled" and made["spec"]["maxReplicas"] == 3

    # The next run of a sweep: the system put back, then mode: fixed pauses KEDA.
    platform.restore_system(snapshot)
    platform.apply_system(system_of({"ingestor": {"mode": "fixed"}}))
    assert read(admin, SCALED_OBJECT, "ingestor")["metadata"]["annotations"][PAUSED] == "true"

    platform.restore_system(snapshot)
    assert kept(read(admin, SCALED_OBJECT, "ingestor")) == charts["ingestor"]
    assert kept(read(admin, HPA, "gateway")) == charts["gateway"]
    assert read(admin, HPA, "registry") is None
    assert kube.serves(SCALED_OBJECT.group, SCALED_OBJECT.version) is True
    assert kube.serves(SCALED_OBJECT.group, "v9") is False


@pytest.mark.parametrize("namespace, name", [(OTHER, "ingestor"), (SYSTEM, "someone-elses")])
def test_the_operator_reaches_no_other_autoscaler(operator_kube, namespace, name):
    admin, kube = operator_kube
    kind = SCALED_OBJECT
    admin.custom.create_namespaced_custom_object(kind.group, kind.version, namespace, kind.plural, {
        "apiVersion": kind.api_version, "kind": kind.kind, "metadata": {"name": name}, "spec": CHART_SCALED_OBJECT})
    for call in (lambda: kube.autoscaler(namespace, kind, name),
                 lambda: kube.patch_autoscaler(namespace, kind, name, [{"op": "add", "path": "/spec/maxReplicaCount",
                                                                       "value": 50}]),
                 lambda: kube.delete_autoscaler(namespace, kind, name),
                 lambda: kube.custom.list_namespaced_custom_object(kind.group, kind.version, SYSTEM, kind.plural)):
        with pytest.raises(ApiException) as refused:
            call()
        assert refused.value.status == 403
    if namespace == OTHER:
        with pytest.raises(ApiException) as refused:
            kube.create_autoscaler(HPA, {"apiVersion": HPA.api_version, "kind": HPA.kind,
                                         "metadata": {"name": "gateway", "namespace": OTHER}, "spec": CHART_HPA})
        assert refused.value.status == 403


def test_keda_under_a_release_rendered_without_it_ends_in_error_naming_the_field(rbac, control_plane):
    """The chart rendered where KEDA's API was not served gives the operator no TriggerAuthentication:
    a LoadTest asking for KEDA ends in Error (InvalidSpec) before it takes the system."""
    admin, operator_kubeconfig, chart_env = rbac
    assert not any(k.startswith("ELVES_KEDA_") for k in chart_env)
    control_plane.install_crds(CRD_FILE)
    settings = {"KUBECONFIG": str(operator_kubeconfig), "ELVES_SYSTEM_NAMESPACE": SYSTEM, "ELVES_SECRET_NAME": "elves",
                "ELVES_LOADTEST_NAMESPACES": chart_env["ELVES_LOADTEST_NAMESPACES"]}
    untouched = kept(read(admin, SCALED_OBJECT, "ingestor"))  # the chart's, if an earlier test made it
    admin.create_loadtest(SYSTEM, "wants-keda", {
        "load": {"scenario": "system-mix", "rate": "60/min", "duration": "1m"},
        "system": {"autoscaling": {"ingestor": {"mode": "keda"}}}})
    status = tick_until(a_driver(settings), admin, SYSTEM, "wants-keda", lambda s: s.get("phase") == "Error",
                        "the Error phase")
    error = harness_error(status)
    assert error["reason"] == "InvalidSpec"
    assert error["message"].startswith("spec.system.autoscaling.ingestor.mode: keda needs KEDA")
    assert "`helm upgrade` the release" in error["message"]
    assert "snapshot" not in status and kept(read(admin, SCALED_OBJECT, "ingestor")) == untouched
    assert admin.lock_holder(SYSTEM) == ""
    admin.delete_loadtest(SYSTEM, "wants-keda")
