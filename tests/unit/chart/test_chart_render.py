"""Tier 1: every ci value set of the chart lints cleanly and renders plain, valid objects.

What a user would notice if these broke: `helm install` failing on one of charts/elves/ci/*.yaml,
two objects with one name, an object outside the release namespace, or the system exposed by
an Ingress. (Server-side dry-run against a real kube-apiserver is tier 3: tests/apiserver.)
"""

from __future__ import annotations

import re

from chart_testkit import CHART, CI_VALUES, NAMESPACE, ci_values, of_kind, render, run_helm


def test_there_are_ci_value_sets():
    names = {p.stem for p in CI_VALUES}
    assert {"default-values", "external-rabbitmq-postgres-values", "minimal-resources-values",
            "no-monitoring-values"} <= names


@ci_values
def test_helm_lint_is_clean(helm, values_file):
    result = run_helm(helm, "lint", str(CHART), "--strict", "--namespace", NAMESPACE, "--values", str(values_file))
    assert result.returncode == 0, result.stdout + result.stderr


@ci_values
def test_render_gives_plain_valid_objects(helm, values_file):
    objects = render(helm, values_file)
    seen = set()
    dns_name = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
    for obj in objects:
        assert set(obj) >= {"apiVersion", "kind", "metadata"}, obj
        assert not obj["kind"].endswith("List"), "a List is not an object the API server stores"
        name = obj["metadata"]["name"]
        assert dns_name.match(name) and len(name) <= 63, f"{obj['kind']} name {name!r} is not a valid name"
        key = (obj["kind"], obj["metadata"].get("namespace"), name)
        assert key not in seen, f"{key} rendered twice"
        seen.add(key)
        if obj["kind"] not in {"ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy",
                               "ValidatingAdmissionPolicyBinding"}:
            # A ci set installs into one fresh namespace (as chart-testing and the dry-run tier do).
            assert obj["metadata"].get("namespace") == NAMESPACE, f"{obj['kind']} {name} is not in the release namespace"
    assert not of_kind(objects, "Ingress"), "nothing is exposed by an Ingress"
