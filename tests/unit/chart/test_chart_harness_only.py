"""Tier 1: the harness alone (system.enabled: false), to judge another team's system: the
operator, the CRDs, the runner RBAC and the load dashboard; none of Elves' own services, broker,
database, their Secrets' passwords, NetworkPolicies, monitors or alerts; NOTES say a LoadTest
then needs a SystemUnderTest; the operator is told (ELVES_SYSTEM_ENABLED) so it refuses a
LoadTest that names none.

What a user would notice if these broke: a team that wants only the harness runs Elves' gateway,
RabbitMQ and PostgreSQL beside its own system, or an operator that judges a system not there."""

from __future__ import annotations

from pathlib import Path

from chart_testkit import CHART, CLUSTER_API_VERSIONS, NAMESPACE, env_of, named, of_kind, render, template_error

from test_chart_notes_and_helm_test import render_notes

HARNESS = CHART / "ci" / "harness-only-values.yaml"
ELVES_OWN = {"gateway", "registry", "ingestor", "rabbitmq", "postgres"}
CRDS = {"loadtests.elves.dev", "systemundertests.elves.dev"}


def test_the_harness_alone_renders_none_of_elves_own_system(helm):
    objects = render(helm, HARNESS)
    # No workload, Service, disruption budget, monitor, autoscaler or policy of Elves' system.
    for kind in ("Deployment", "StatefulSet", "Service", "PodDisruptionBudget", "ServiceMonitor", "NetworkPolicy",
                 "ScaledObject", "HorizontalPodAutoscaler", "ConfigMap"):
        assert not ELVES_OWN & {o["metadata"]["name"] for o in of_kind(objects, kind)}, kind
    assert of_kind(objects, "StatefulSet") == [] and of_kind(objects, "Service") == []
    assert of_kind(objects, "PrometheusRule") == [] and of_kind(objects, "ServiceMonitor") == []
    assert of_kind(objects, "SystemUnderTest") == []  # no built-in target: each LoadTest names its own
    # One Secret: the operator's seal key, no password, no registry key; no helm test pod.
    (secret,) = of_kind(objects, "Secret")
    assert (secret["metadata"]["name"], set(secret["data"])) == ("elves", {"jwt-secret"})
    assert of_kind(objects, "Pod") == []


def test_the_harness_alone_keeps_the_operator_its_rbac_and_the_load_dashboard(helm):
    objects = render(helm, HARNESS)
    (operator,) = of_kind(objects, "Deployment")
    assert operator["metadata"]["name"] == "elves-operator"
    env = env_of(operator["spec"]["template"]["spec"]["containers"][0])
    assert env["ELVES_SYSTEM_ENABLED"]["value"] == "false"
    assert named(objects, "ClusterRole", "elves-elves-operator-run-objects")["rules"]  # runs LoadTests
    assert named(objects, "NetworkPolicy", "elves-operator")  # and its own paths, nothing of Elves' pods
    # Over Elves' own namespace it keeps only the read of its seal key: nothing to scale or exec into.
    (rule,) = named(objects, "Role", "elves-operator-system")["rules"]
    assert (rule["resources"], rule["resourceNames"], rule["verbs"]) == (["secrets"], ["elves"], ["get"])
    dashboards = {o["metadata"]["name"] for o in of_kind(objects, "ConfigMap") if "grafana_dashboard" in
                  o["metadata"]["labels"]}
    assert dashboards == {"elves-dashboard-load"}  # k6's figures per test id, for any target
    # The CRDs are in crds/, which Helm installs whatever the values.
    assert {f.name.removesuffix(".yaml") for f in (CHART / "crds").glob("*.yaml")} == CRDS


def test_the_whole_chart_still_installs_the_system_and_tells_the_operator(helm):
    objects = render(helm)
    assert ELVES_OWN <= {o["metadata"]["name"] for o in of_kind(objects, "Deployment") + of_kind(objects, "StatefulSet")}
    operator = named(objects, "Deployment", "elves-operator")
    assert env_of(operator["spec"]["template"]["spec"]["containers"][0])["ELVES_SYSTEM_ENABLED"]["value"] == "true"


def test_the_schema_takes_a_boolean_and_the_broker_settings_are_not_asked_for(helm):
    assert "/system/enabled" in template_error(helm, "system.enabled=maybe")
    # Without Elves' system there is no broker or database to point at: no externalRabbitmq asked.
    assert render(helm, HARNESS, "rabbitmq.enabled=false", "postgresql.enabled=false")


def test_notes_say_a_loadtest_then_needs_a_system_under_test(helm, tmp_path: Path):
    notes = render_notes(helm, tmp_path, *CLUSTER_API_VERSIONS, sets=("system.enabled=false",))
    assert "the harness alone" in notes and "A LoadTest then needs a SystemUnderTest" in notes
    assert "spec.target.systemUnderTest" in notes
    assert f"kubectl -n {NAMESPACE} rollout status deployment/elves-operator" in notes
    assert "deployment/gateway" not in notes and "helm test" not in notes
