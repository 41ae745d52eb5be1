"""Tier 1: the services' autoscalers (services.<name>.autoscaling): a KEDA ScaledObject on the
ingestor's work queue, read as a RabbitMQ user that may do nothing else, and HPAs on CPU for the
gateway and the registry; each only where the cluster serves its API, with NOTES naming what is
missing; a Deployment whose replicas an autoscaler owns does not set them; KEDA's operator
reaches RabbitMQ through the NetworkPolicies.

What a user would notice if these broke: an upgrade that resets the replicas KEDA chose, a chart
that fails to install on a cluster without KEDA (or says nothing about why the ingestor does not
scale), KEDA holding a password that can read or publish messages, or a ScaledObject KEDA cannot
reach RabbitMQ with.
"""

from __future__ import annotations

import base64
import glob
import os
from pathlib import Path

import pytest
import yaml
from prerequisites import require

from chart_testkit import (CHART, CLUSTER_API_VERSIONS, NAMESPACE, env_of, named, of_kind, render, run_helm,
                           template_error)
from test_chart_notes_and_helm_test import _upstream_chart_versions, render_notes

from elves.cache import cache_root
from elves.constants import QUEUE_INGESTOR_DATA, SCALED_ON_QUEUE
from elves.data_plane import KEDA_USER
from elves.engine.models.autoscaling import settings_type
from elves.k8s import autoscalers as k8s_autoscalers
from elves.k8s.settings import OperatorSettings

KEDA_API = "keda.sh/v1alpha1"
WITH_KEDA = CLUSTER_API_VERSIONS + (KEDA_API,)
ALL_ON = ("services.ingestor.autoscaling.enabled=true", "services.gateway.autoscaling.enabled=true",
          "services.registry.autoscaling.enabled=true")
AUTOSCALER_KINDS = ("ScaledObject", "HorizontalPodAutoscaler")


def autoscalers(objects) -> dict[str, dict]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] in AUTOSCALER_KINDS}


def test_the_ingestor_scales_on_its_queue_and_the_others_on_cpu(helm):
    objects = render(helm, None, *ALL_ON, "services.ingestor.autoscaling.messagesPerReplica=35",
                     "services.ingestor.autoscaling.cooldownSeconds=90", api_versions=WITH_KEDA)
    scalers = autoscalers(objects)
    assert {name: o["kind"] for name, o in scalers.items()} == {
        "ingestor": "ScaledObject", "gateway": "HorizontalPodAutoscaler", "registry": "HorizontalPodAutoscaler"}
    keda = scalers["ingestor"]["spec"]
    assert keda["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "ingestor"}
    assert (keda["minReplicaCount"], keda["maxReplicaCount"], keda["pollingInterval"]) == (1, 5, 15)
    # The cooldown also holds the HPA KEDA makes back from removing replicas.
    assert keda["cooldownPeriod"] == 90
    assert keda["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleDown"] == {
        "stabilizationWindowSeconds": 90}
    [trigger] = keda["triggers"]
    # The queue is the one elves.constants names, reached without a credential in the object.
    assert trigger["metadata"]["queueName"] == SCALED_ON_QUEUE["ingestor"] == QUEUE_INGESTOR_DATA
    assert trigger["metadata"] | {"value": "35"} == trigger["metadata"]
    assert trigger["metadata"]["host"] == "amqp://rabbitmq.elves.svc:5672" and trigger["metadata"]["mode"] == "QueueLength"
    assert trigger["authenticationRef"] == {"name": "elves-keda-rabbitmq"}
    hpa = scalers["gateway"]["spec"]
    assert (hpa["minReplicas"], hpa["maxReplicas"]) == (1, 4)
    assert hpa["metrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}}]


# The chart's value names and the LoadTest's field names of the same settings.
CHART_TO_SPEC = {"minReplicas": "minReplicas", "maxReplicas": "maxReplicas", "messagesPerReplica": "messagesPerReplica",
                 "pollingIntervalSeconds": "pollingInterval", "cooldownSeconds": "cooldown",
                 "cpuUtilization": "cpuUtilization"}
SETTINGS = {"ingestor": {"minReplicas": 0, "maxReplicas": 7, "messagesPerReplica": 35, "pollingIntervalSeconds": 5,
                         "cooldownSeconds": 45},
            "gateway": {"minReplicas": 2, "maxReplicas": 6, "cpuUtilization": 55},
            "registry": {"minReplicas": 1, "maxReplicas": 3, "cpuUtilization": 90}}


def test_a_loadtests_autoscalers_are_the_charts_for_the_same_settings(helm):
    """One shape: what a run compares with fixed replicas is the autoscaler the chart installs."""
    sets = [*ALL_ON, *(f"services.{d}.autoscaling.{k}={v}" for d, values in SETTINGS.items() for k, v in values.items())]
    objects = render(helm, None, *sets, api_versions=WITH_KEDA)
    # What the chart tells the operator, read as the operator reads it.
    operator_env = {k: v["value"] for k, v in env_of(named(objects, "Deployment", "elves-operator")[
        "spec"]["template"]["spec"]["containers"][0]).items() if "value" in v}
    keda = OperatorSettings.from_env(operator_env).keda
    for deployment, values in SETTINGS.items():
        spec_values = {CHART_TO_SPEC[k]: (f"{v}s" if k.endswith("Seconds") else v) for k, v in values.items()}
        settings = settings_type(deployment).model_validate(spec_values)
        made = k8s_autoscalers.body(deployment, NAMESPACE, {}, k8s_autoscalers.spec_of(deployment, settings, keda))
        chart = autoscalers(objects)[deployment]
        assert (made["apiVersion"], made["kind"], made["metadata"]["name"], made["metadata"]["namespace"]) == \
            (chart["apiVersion"], chart["kind"], chart["metadata"]["name"], chart["metadata"]["namespace"])
        assert made["spec"] == chart["spec"], deployment


def test_the_operator_learns_kedas_trigger_authentication_only_where_the_chart_renders_it(helm):
    def operator_env(*sets, api_versions=WITH_KEDA):
        container = named(render(helm, None, *sets, api_versions=api_versions), "Deployment",
                          "elves-operator")["spec"]["template"]["spec"]["containers"][0]
        return {k: v.get("value") for k, v in env_of(container).items() if k.startswith("ELVES_KEDA_")}

    with_keda = render(helm, None, api_versions=WITH_KEDA)
    assert operator_env() == {"ELVES_KEDA_TRIGGER_AUTHENTICATION": named(with_keda, "TriggerAuthentication",
                                                                         "elves-keda-rabbitmq")["metadata"]["name"],
                              "ELVES_KEDA_RABBITMQ_HOST": "amqp://rabbitmq.elves.svc:5672"}
    # Without it the operator refuses mode: keda, saying what to install.
    assert operator_env(api_versions=CLUSTER_API_VERSIONS) == {}
    assert operator_env("rabbitmq.enabled=false", "externalRabbitmq.host=mq.example",
                        "externalRabbitmq.password=pw") == {}


def test_kedas_credentials_are_a_read_only_user_from_a_secret(helm):
    objects = render(helm, None, "services.ingestor.autoscaling.enabled=true", api_versions=WITH_KEDA)
    auth = named(objects, "TriggerAuthentication", "elves-keda-rabbitmq")["spec"]
    assert auth == {"secretTargetRef": [{"parameter": "username", "name": "elves-keda", "key": "rabbitmq-username"},
                                        {"parameter": "password", "name": "elves-keda", "key": "rabbitmq-password"}]}
    secret = named(objects, "Secret", "elves-keda")
    assert base64.b64decode(secret["data"]["rabbitmq-username"]).decode() == KEDA_USER.name
    assert len(base64.b64decode(secret["data"]["rabbitmq-password"])) >= 32
    assert secret["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    # A passive queue.declare (the queue's length) needs no permission: none is granted.
    assert (KEDA_USER.configure, KEDA_USER.write, KEDA_USER.read) == ("^$", "^$", "^$")
    # No workload reads KEDA's Secret.
    def names_in(node) -> set[str]:
        if isinstance(node, dict):
            named_here = {v for k, v in node.items() if k in ("name", "secretName") and isinstance(v, str)}
            return named_here.union(*(names_in(v) for v in node.values()))
        return set().union(*(names_in(v) for v in node)) if isinstance(node, list) else set()

    for deployment in of_kind(objects, "Deployment"):
        assert "elves-keda" not in names_in(deployment["spec"]), deployment["metadata"]["name"]
    with_existing = render(helm, None, "services.ingestor.autoscaling.enabled=true", "secrets.existingSecret=mine",
                           api_versions=WITH_KEDA)
    refs = named(with_existing, "TriggerAuthentication", "elves-keda-rabbitmq")["spec"]["secretTargetRef"]
    assert {(r["name"], r["key"]) for r in refs} == {("mine", "rabbitmq-keda-username"), ("mine", "rabbitmq-keda-password")}


def test_autoscalers_exist_only_where_the_cluster_serves_their_api(helm):
    without_keda = render(helm, None, *ALL_ON)
    assert set(autoscalers(without_keda)) == {"gateway", "registry"}
    assert of_kind(without_keda, "TriggerAuthentication") == []
    # Not autoscaled there, so the ingestor keeps its fixed replicas.
    assert named(without_keda, "Deployment", "ingestor")["spec"]["replicas"] == 1
    assert autoscalers(render(helm, api_versions=WITH_KEDA)) == {}, "off by default"


def test_a_deployment_leaves_the_replicas_to_its_autoscaler(helm):
    objects = render(helm, None, "services.ingestor.autoscaling.enabled=true", "services.ingestor.replicas=3",
                     "services.gateway.replicas=2", api_versions=WITH_KEDA)
    assert "replicas" not in named(objects, "Deployment", "ingestor")["spec"]
    assert named(objects, "Deployment", "gateway")["spec"]["replicas"] == 2


def test_notes_name_keda_when_the_ingestors_autoscaling_cannot_be_rendered(helm, tmp_path):
    wanted = ("services.ingestor.autoscaling.enabled=true",)
    notes = render_notes(helm, tmp_path, *CLUSTER_API_VERSIONS, sets=wanted)
    pins = _upstream_chart_versions()
    assert "MISSING from this cluster" in notes and "KEDA (API keda.sh/v1alpha1" in notes and "ingestor" in notes
    [install] = [line for line in notes.splitlines() if "helm upgrade --install keda" in line]
    assert f"--repo {pins['KEDA_CHART_REPO']} --version {pins['KEDA_CHART_VERSION']} -n keda" in install
    served = tmp_path / "served"
    served.mkdir()
    assert "MISSING" not in render_notes(helm, served, *WITH_KEDA, sets=wanted)
    quiet = tmp_path / "quiet"
    quiet.mkdir()
    assert "KEDA" not in render_notes(helm, quiet, *CLUSTER_API_VERSIONS), "nothing asked for, nothing missing"


@pytest.mark.parametrize("sets, message", [
    (("services.gateway.autoscaling.enabled=true", "services.gateway.autoscaling.minReplicas=5",
      "services.gateway.autoscaling.maxReplicas=2"),
     "services.gateway.autoscaling.maxReplicas (2) is below minReplicas (5)"),
    (("services.ingestor.autoscaling.enabled=true", "rabbitmq.enabled=false", "externalRabbitmq.host=mq.example",
      "externalRabbitmq.password=pw"),
     "services.ingestor.autoscaling needs rabbitmq.enabled"),
    (("services.registry.autoscaling.cpuUtilization=0",), "/services/registry/autoscaling/cpuUtilization"),
    (("services.ingestor.autoscaling.enabled=yes",), "/services/ingestor/autoscaling/enabled"),
])
def test_bad_autoscaling_values_are_refused_naming_the_field(helm, sets, message):
    assert message in template_error(helm, *sets)


def test_cpu_autoscaling_without_a_cpu_request_is_refused_even_past_the_schema(helm):
    sets = ("services.gateway.autoscaling.enabled=true", "services.gateway.resources.requests.cpu=null")
    assert "/services/gateway/resources/requests" in template_error(helm, *sets)
    args = ["template", "elves", str(CHART), "--skip-schema-validation", *(a for s in sets for a in ("--set", s))]
    result = run_helm(helm, *args)
    assert result.returncode != 0 and "set services.gateway.resources.requests.cpu" in result.stderr, result.stderr


def test_kedas_operator_namespace_reaches_only_rabbitmqs_amqp_port(helm):
    def rules_from_namespace(namespace: str, *sets: str, api_versions=WITH_KEDA) -> list:
        policies = of_kind(render(helm, None, *sets, api_versions=api_versions), "NetworkPolicy")
        return [(policy["metadata"]["name"], rule) for policy in policies for rule in policy["spec"].get("ingress", [])
                if {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}} in rule["from"]]

    assert rules_from_namespace("autoscalers", "networkPolicy.keda.namespace=autoscalers") == [("rabbitmq", {
        "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "autoscalers"}}}],
        "ports": [{"port": "amqp", "protocol": "TCP"}]})]
    assert rules_from_namespace("keda", api_versions=CLUSTER_API_VERSIONS) == [], "no KEDA, no path"
    assert rules_from_namespace("keda", "networkPolicy.keda.namespace=") == [], "switched off"


def _crd_schema(file_name: str) -> dict:
    cache = cache_root()
    found = glob.glob(f"{cache}/crds/keda-*/{file_name}")
    require(found, "KEDA's CRDs are not fetched (tools/fetch-crds.sh)")
    [version] = [v for v in yaml.safe_load(Path(found[0]).read_text())["spec"]["versions"] if v["name"] == "v1alpha1"]
    return version["schema"]["openAPIV3Schema"]


def _unknown_fields(value, schema: dict, where: str) -> list[str]:
    """The paths in `value` that the structural schema has no place for (KEDA would drop or refuse them)."""
    if isinstance(value, list):
        return [p for i, item in enumerate(value) for p in _unknown_fields(item, schema.get("items", {}), f"{where}[{i}]")]
    if not isinstance(value, dict) or "properties" not in schema:
        return []  # a scalar, or a free-form map (trigger metadata)
    unknown = []
    for key, item in value.items():
        if key in schema["properties"]:
            unknown += _unknown_fields(item, schema["properties"][key], f"{where}.{key}")
        else:
            unknown.append(f"{where}.{key}")
    return unknown


def test_kedas_objects_fit_the_crds_of_the_pinned_keda(helm):
    objects = render(helm, None, "services.ingestor.autoscaling.enabled=true", api_versions=WITH_KEDA)
    for kind, file_name in (("ScaledObject", "keda.sh_scaledobjects.yaml"),
                            ("TriggerAuthentication", "keda.sh_triggerauthentications.yaml")):
        schema = _crd_schema(file_name)
        [obj] = of_kind(objects, kind)
        assert _unknown_fields(obj["spec"], schema["properties"]["spec"], "spec") == [], kind
        assert set(schema["properties"]["spec"].get("required", [])) <= set(obj["spec"]), kind
