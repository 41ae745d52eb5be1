"""Tier 1: the chart ships Elves' own system as the built-in SystemUnderTest `elves`, exactly as
the engine states it (elves.engine.models.target.builtin_system()), and the operator may read
SystemUnderTests where LoadTests live and the built-in one by name, with no other verb.

What a user would notice if these broke: a LoadTest that names no target judged against
workloads or queues that are not the chart's, or an operator the API server forbids to read its
target.
"""

from __future__ import annotations

from chart_testkit import (CLUSTER_API_VERSIONS, NAMESPACE, SCOPED_OPERATOR, SERVICES, SUT_API, ci_values,
                           installs_the_system, named,
                           of_kind, render, rules_of)
from test_chart_notes_and_helm_test import render_notes

from elves.constants import BUILTIN_SYSTEM_UNDER_TEST, DEPLOYMENTS
from elves.engine.models.builtin_system import BUILTIN_SYSTEM_PATH, builtin_system_yaml
from elves.engine.models.target import builtin_system, parse_system_under_test


def test_the_chart_file_equals_the_generated_builtin_system():
    assert BUILTIN_SYSTEM_PATH.read_text(encoding="utf-8") == builtin_system_yaml(), \
        f"{BUILTIN_SYSTEM_PATH} is stale: run `.venv/bin/elves builtin-system --output {BUILTIN_SYSTEM_PATH}` and commit it"


@ci_values
def test_the_builtin_system_is_rendered_in_the_release_namespace_as_the_engine_states_it(helm, values_file):
    if not installs_the_system(values_file):  # the harness alone: no built-in target to judge
        assert of_kind(render(helm, values_file), "SystemUnderTest") == []
        return
    (sut,) = of_kind(render(helm, values_file), "SystemUnderTest")
    expected = builtin_system()
    assert sut["metadata"]["name"] == BUILTIN_SYSTEM_UNDER_TEST and sut["metadata"]["namespace"] == NAMESPACE
    assert sut["metadata"]["labels"]["app.kubernetes.io/component"] == "system-under-test"
    assert (sut["apiVersion"], sut["kind"], sut["spec"]) == (expected["apiVersion"], expected["kind"], expected["spec"])
    parse_system_under_test({**sut, "metadata": {"name": sut["metadata"]["name"]}})
    # The workloads it lists are the chart's own Deployments.
    assert sorted(w["name"] for w in sut["spec"]["workloads"]) == sorted(DEPLOYMENTS) == sorted(SERVICES)
    deployments = {d["metadata"]["name"] for d in of_kind(render(helm, values_file), "Deployment")}
    assert set(DEPLOYMENTS) <= deployments


def _system_under_test_rules(objects):
    """The operator's (the roles the chart ships for people: test_chart_admission.py)."""
    return [(kind, name, rule) for kind in ("Role", "ClusterRole") for name, rule in rules_of(objects, kind)
            if "systemundertests" in rule["resources"] and "-operator" in name]


@ci_values
def test_the_operator_may_only_get_systems_under_test(helm, values_file):
    objects = render(helm, values_file)
    rules = _system_under_test_rules(objects)
    assert rules and all(rule["verbs"] == ["get"] and rule["apiGroups"] == ["elves.dev"] for _, _, rule in rules)
    system_role = named(objects, "Role", "elves-operator-system")
    # The built-in one by name, only where the chart installs it (not the harness alone).
    assert any(rule.get("resourceNames") == [BUILTIN_SYSTEM_UNDER_TEST] and "systemundertests" in rule["resources"]
               for rule in system_role["rules"]) is installs_the_system(values_file)


def test_a_namespace_scoped_operator_reads_targets_only_where_it_serves(helm):
    objects = render(helm, None, *SCOPED_OPERATOR)
    rules = _system_under_test_rules(objects)
    assert not [r for r in rules if r[0] == "ClusterRole"]
    namespaces = {o["metadata"]["namespace"] for o in of_kind(objects, "Role")
                  if any("systemundertests" in r["resources"] for r in o["rules"])}
    assert namespaces == {"elves", "load-tests"}


def test_where_the_systemundertest_api_is_not_served_the_builtin_system_is_left_out_and_notes_say_how_to_add_it(
        helm, tmp_path):
    # A dry run of a first install, or an upgrade of a release from before the CRD (Helm applies
    # crds/ on a first install only): rendering the object would fail the whole release.
    without = tuple(v for v in CLUSTER_API_VERSIONS if v != SUT_API)
    assert of_kind(render(helm, None, api_versions=without), "SystemUnderTest") == []
    notes = render_notes(helm, tmp_path, *without)
    assert "built-in SystemUnderTest elves was left out" in notes
    assert "kubectl apply --server-side -f charts/elves/crds/systemundertests.elves.dev.yaml" in notes
    served = render_notes(helm, tmp_path / "served", *CLUSTER_API_VERSIONS)
    assert "was left out" not in served and "crds/systemundertests" not in served
