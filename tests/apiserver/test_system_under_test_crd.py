"""The SystemUnderTest CRD on a real kube-apiserver: the built-in profile the chart ships and a
foreign system go in; a bad one comes back with a message that names the field, as `elves
validate` names it (tests/unit/engine/test_models_target.py). A LoadTest's spec.target too, and
the operator's read of it (elves.k8s.target) through the real client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from foreign_system import FOREIGN_SPEC, foreign_system
from kubernetes import config

from elves.constants import WORK_QUEUES
from elves.engine.models.loadtest import parse_loadtest
from elves.k8s.kube import Kube
from elves.k8s.target import resolve_target

from . import control_plane as cp

CRDS = cp.REPO / "charts" / "elves" / "crds"
PROFILE = cp.REPO / "charts" / "elves" / "files" / "system-under-test.yaml"
NAMESPACE = "sut-crd"

# spec fields replacing the foreign system's -> the field the error names, and what it says.
INVALID = [
    pytest.param({"workloads": []}, "spec.workloads", "should have at least 1 items", id="no-workloads"),
    pytest.param({"workloads": [{"name": "a", "selector": {"matchLabels": {"app": "a"}}}]},
                 "spec.workloads[0]", "set exactly one of name or selector", id="name-and-selector"),
    pytest.param({"workloads": [{"name": "a", "kind": "DaemonSet"}]}, "spec.workloads[0].kind", "Unsupported value",
                 id="daemonset"),
    pytest.param({"workloads": [{"name": "a"}, {"name": "a", "kind": "StatefulSet"}]}, "spec.workloads",
                 "each workload name appears once", id="named-twice"),
    pytest.param({"queues": {}}, "spec.queues", "set exactly one of rabbitmq", id="no-queues"),
    pytest.param({"queues": {"rabbitmq": ["bad queue"]}}, "spec.queues.rabbitmq[0]", "should match", id="queue-name"),
    pytest.param({"testIdHeader": "X Test"}, "spec.testIdHeader", "should match", id="header-name"),
    pytest.param({"ledger": {"registry": {}, "accepted": {"endpoint": "x"}}}, "spec.ledger",
                 "set either registry: {}", id="registry-and-counts"),
    pytest.param({"ledger": {"accepted": {"endpoint": "x"}, "persisted": {"promql": "sum(orders_saved_total)"}}},
                 "spec.ledger.persisted.promql", "use the $TEST_ID placeholder", id="persisted-not-scoped"),
]


def system_under_test(name: str, **spec: Any) -> str:
    return json.dumps(foreign_system(name, NAMESPACE, **spec))


@pytest.fixture(scope="module")
def crds(control_plane: cp.ControlPlane) -> None:
    """The chart's CRDs (both are generated from the engine's models), and a namespace."""
    control_plane.install_crds(*sorted(CRDS.glob("*.yaml")))
    control_plane.kubectl("create", "namespace", NAMESPACE)


def dry_run_apply(plane: cp.ControlPlane, manifest: str) -> Any:
    return plane.kubectl("apply", "--dry-run=server", "-f", "-", stdin=manifest, check=False)


def test_the_builtin_profile_and_a_foreign_system_are_accepted(control_plane: cp.ControlPlane, crds: None) -> None:
    profile = yaml.safe_load(PROFILE.read_text())
    result = dry_run_apply(control_plane, system_under_test("elves", **profile["spec"]))
    assert result.returncode == 0, result.stderr
    control_plane.kubectl("apply", "-f", "-", stdin=system_under_test("orders"))
    stored = json.loads(control_plane.kubectl("get", "sut", "orders", "-n", NAMESPACE, "-o", "json").stdout)
    assert stored["spec"] == FOREIGN_SPEC


@pytest.mark.parametrize(("fields", "field", "says"), INVALID)
def test_a_bad_system_under_test_is_refused_naming_the_field(control_plane: cp.ControlPlane, crds: None,
                                                             fields: dict[str, Any], field: str, says: str) -> None:
    result = dry_run_apply(control_plane, system_under_test("bad", **fields))
    assert result.returncode != 0, f"accepted: {fields}"
    assert field in result.stderr and says in result.stderr, result.stderr


@pytest.mark.parametrize(("target", "ok"), [({"systemUnderTest": "orders"}, True), ({}, False),
                                            ({"systemUnderTest": "Orders"}, False)])
def test_a_loadtest_names_its_target(control_plane: cp.ControlPlane, crds: None, target: dict, ok: bool) -> None:
    manifest = json.dumps({"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest",
                           "metadata": {"name": "targeted", "namespace": NAMESPACE},
                           "spec": {"target": target,
                                    "load": {"scenario": "system-mix", "rate": "60/min", "duration": "1m"}}})
    result = dry_run_apply(control_plane, manifest)
    assert (result.returncode == 0) == ok, result.stderr
    if not ok:
        assert "spec.target.systemUnderTest" in result.stderr, result.stderr


def test_the_operator_reads_the_target_a_loadtest_names_and_falls_back_to_the_engines_profile(
        control_plane: cp.ControlPlane, crds: None, kubeconfig: Path) -> None:
    """What elves.k8s.target does on a real API server: a SystemUnderTest by name in the
    LoadTest's namespace; no built-in one in the system namespace, so the engine's profile."""
    control_plane.kubectl("apply", "-f", "-", stdin=system_under_test("read-by-name"))
    kube = Kube(config.new_client_from_config(config_file=str(kubeconfig)))

    def spec(**fields: Any):
        return parse_loadtest({"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest", "metadata": {"name": "t"},
                               "spec": {"load": {"scenario": "system-mix", "rate": "60/min", "duration": "1m"},
                                        **fields}}).spec

    target, problems, _ = resolve_target(kube, NAMESPACE, spec(target={"systemUnderTest": "read-by-name"}), "elves")
    assert problems == [] and target.queues.rabbitmq == ["orders.in"]
    target, problems, _ = resolve_target(kube, NAMESPACE, spec(target={"systemUnderTest": "absent"}), "elves")
    assert target is None and problems[0].startswith("spec.target.systemUnderTest: there is no SystemUnderTest")
    target, problems, _ = resolve_target(kube, NAMESPACE, spec(), "no-such-namespace")
    assert problems == [] and target.queues.rabbitmq == list(WORK_QUEUES)
