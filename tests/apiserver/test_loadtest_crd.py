"""The LoadTest CRD on a real kube-apiserver: what `kubectl apply` accepts and rejects.

The CRD (charts/elves/crds/) is generated from the engine's models; these tests hold it to
the syntax every helper agreed on (loadtests/examples/, the LoadTest syntax note): the
examples go in, and a bad spec comes back with a message that names the field.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from . import control_plane as cp

CRD_FILE = cp.REPO / "charts" / "elves" / "crds" / "loadtests.elves.dev.yaml"
EXAMPLES = sorted((cp.REPO / "loadtests" / "examples").rglob("*.yaml"))
NAMESPACE = "loadtest-crd"

# Every section of the syntax with a valid value, so each invalid case below changes one
# thing only. test_the_base_spec_is_accepted proves the base itself passes.
VALID_SPEC: dict[str, Any] = {
    "reset": True,
    "system": {
        "replicas": {"gateway": 2, "registry": 2, "ingestor": 1},
        "resources": {"ingestor": {"memory": "2Gi", "cpu": "500m"}},
        "env": {"ingestor": {"ELVES_INGESTOR_CONCURRENCY": "4"}},
    },
    "load": {
        "scenario": "system-mix",
        "rate": "120/min",
        "mix": {"getData": 1, "getStatus": 1, "getHistory": 1, "getAllHistory": 0.33},
        "stages": [{"duration": "1m", "target": "30/min"}, {"duration": "8m", "target": "120/min"}],
        "duration": "10m",
        "parallelism": 1,
        "users": 10,
        "vus": {"preAllocated": 20, "max": 100},
    },
    "faults": [
        {"at": "3m", "scale": {"deployment": "ingestor", "replicas": 0}},
        {"at": "4m", "killPod": {"deployment": "registry"}},
        {"at": "5m", "restart": {"deployment": "gateway"}},
        {"at": "6m", "pause": {"deployment": "gateway", "for": "1.5s"}},
        {"at": "7m", "restartInfra": {"component": "rabbitmq", "downFor": "10s"}},
        {"at": "8m", "resources": {"deployment": "ingestor", "memory": "512Mi"}},
    ],
    "sweep": {"system.replicas.ingestor": [1, 3, 5]},
    "drain": {"timeout": "5m"},
    "runner": {"resources": {"requests": {"cpu": "500m", "memory": "512Mi"}, "limits": {"memory": "1Gi"}},
               "nodeSelector": {"pool": "load"}, "separate": True, "envFromSecrets": ["k6-secrets"],
               "tolerations": [{"key": "load", "operator": "Exists", "effect": "NoSchedule"}],
               "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                   "nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["load"]}]}]}}}},
    "ttlSecondsAfterFinished": 3600,
    "baseline": {"loadTest": "case-3-fault-tolerance", "pick": "lastPassed", "failOn": "p99:+25%"},
    "slo": [
        {"metric": "lost_requests", "op": "==", "value": 0},
        {"metric": "http_req_failed_rate", "op": "<", "value": 0.01},
        {"metric": "http_req_duration_p99", "endpoint": "getHistory", "op": "<", "value": "100ms"},
        {"metric": "queue_depth_max", "queue": "elves.ingestor.data.in", "op": "<", "value": 500},
        {"metric": "pod_restarts", "deployment": "ingestor", "op": "==", "value": 0},
        {"promql": "max_over_time(up[5m])", "op": "<", "value": 1},
    ],
}

# spec fragment (merged into VALID_SPEC; a list replaces the list, None removes the key)
# -> the field path the error message must name.
INVALID_SPECS = [
    pytest.param({"sweep": {"system.replicas.ingestor": [1], "system.replicas.registry": [1],
                            "system.replicas.gateway": [1], "load.rate": ["1/s"]}}, "spec.sweep", id="sweep-of-four-keys"),
    pytest.param({"reset": "yes"}, "spec.reset", id="reset-not-boolean"),
    pytest.param({"runner": {"resources": {"limits": {"memory": "lots"}}}}, "spec.runner.resources.limits.memory",
                 id="runner-memory-not-a-quantity"),
    pytest.param({"ttlSecondsAfterFinished": -1}, "spec.ttlSecondsAfterFinished", id="ttl-negative"),
    pytest.param({"load": {"rate": "fast"}}, "spec.load.rate", id="rate-not-a-rate"),
    pytest.param({"load": {"rate": "120/fortnight"}}, "spec.load.rate", id="rate-unknown-unit"),
    pytest.param({"load": {"duration": "ten minutes"}}, "spec.load.duration", id="duration-words"),
    pytest.param({"load": {"parallelism": 0}}, "spec.load.parallelism", id="parallelism-zero"),
    pytest.param({"load": {"parallelism": "two"}}, "spec.load.parallelism", id="parallelism-string"),
    pytest.param({"load": {"users": 0}}, "spec.load.users", id="users-zero"),
    pytest.param({"load": {"scenario": "no-such-mix"}}, "spec.load.scenario", id="scenario-unknown"),
    pytest.param({"load": {"profile": "sawtooth"}}, "spec.load.profile", id="profile-unknown"),
    pytest.param({"load": {"warmup": "soon"}}, "spec.load.warmup", id="warmup-neither-auto-nor-a-duration"),
    pytest.param({"load": {"stages": [{"duration": "1m", "target": "lots"}]}},
                 "spec.load.stages[0].target", id="stage-target-not-a-rate"),
    pytest.param({"load": {"stages": [{"target": "30/min"}]}},
                 "spec.load.stages[0].duration", id="stage-without-duration"),
    pytest.param({"load": {"vus": {"preAllocated": -1}}}, "spec.load.vus.preAllocated",
                 id="vus-negative"),
    pytest.param({"load": {"scenario": None, "script": {"configMap": {"name": "my-script"}}}},
                 "spec.load.script.configMap.file", id="script-configmap-without-file"),
    pytest.param({"load": {"rat": "120/min"}}, "spec.load.rat", id="unknown-field-typo"),
    pytest.param({"system": {"replicas": {"ingestor": -1}}}, "spec.system.replicas.ingestor",
                 id="replicas-negative"),
    pytest.param({"system": {"resources": {"ingestor": {"memory": "lots"}}}},
                 "spec.system.resources.ingestor.memory", id="memory-not-a-quantity"),
    pytest.param({"system": {"resources": {"ingestor": {"cpu": "fast"}}}},
                 "spec.system.resources.ingestor.cpu", id="cpu-not-a-quantity"),
    pytest.param({"faults": [{"at": "soon", "killPod": {"deployment": "registry"}}]},
                 "spec.faults[0].at", id="fault-at-not-a-duration"),
    pytest.param({"faults": [{"at": "3m", "scale": {"deployment": "ingestor", "replicas": -1}}]},
                 "spec.faults[0].scale.replicas", id="fault-scale-negative"),
    pytest.param({"faults": [{"at": "7m", "restartInfra": {"component": "redis", "downFor": "10s"}}]},
                 "spec.faults[0].restartInfra.component", id="fault-infra-unknown-component"),
    pytest.param({"faults": [{"at": "6m", "pause": {"deployment": "gateway", "for": "a while"}}]},
                 "spec.faults[0].pause.for", id="fault-pause-not-a-duration"),
    pytest.param({"drain": {"timeout": "forever"}}, "spec.drain.timeout", id="drain-forever"),
    pytest.param({"slo": [{"metric": "lost_requests", "op": "~=", "value": 0}]},
                 "spec.slo[0].op", id="slo-unknown-operator"),
    pytest.param({"slo": [{"metric": "happiness", "op": ">", "value": 1}]},
                 "spec.slo[0].metric", id="slo-unknown-metric"),
    pytest.param({"sweep": {"system.replicas.ingestor": 3}}, "spec.sweep", id="sweep-not-a-list"),
    pytest.param({"baseline": {"pick": "best"}}, "spec.baseline.pick", id="baseline-pick-unknown"),
    pytest.param({"baseline": {"loadTest": "Case_3"}}, "spec.baseline.loadTest", id="baseline-loadtest-not-a-name"),
]

# Rules across fields (CEL in the CRD): spec fragment -> the object the error is reported
# on, and the words of the rule's message that tell the user what to change.
BROKEN_RULES = [
    # A fault acts on one of Elves' deployments or on a workload of spec.target's system, not neither or both.
    pytest.param({"faults": [{"at": "3m", "scale": {"replicas": 0}}]},
                 "spec.faults[0].scale", "set exactly one of deployment (Elves' own) or workload",
                 id="fault-scale-without-deployment-or-workload"),
    pytest.param({"faults": [{"at": "3m", "killPod": {"deployment": "ingestor", "workload": "orders-worker"}}]},
                 "spec.faults[0].killPod", "set exactly one of deployment (Elves' own) or workload",
                 id="fault-kill-of-a-deployment-and-a-workload"),
    pytest.param({"load": {"script": {"configMap": {"name": "s", "file": "s.js"}}}},
                 "spec.load", "exactly one of scenario or script", id="scenario-and-script"),
    # Without rate and stages the load is a closed model (users loop): valid. Mixing the two is not.
    pytest.param({"load": {"iterations": 1000}},
                 "spec.load", "iterations (a fixed number, closed model) exclude rate", id="iterations-with-rate"),
    pytest.param({"load": {"vus": {"preAllocated": 50, "max": 10}}},
                 "spec.load.vus", "max must be at least preAllocated", id="vus-max-below-preallocated"),
    pytest.param({"load": {"warmupTimeout": "2m"}},
                 "spec.load", "warmupTimeout needs warmup: auto", id="warmup-timeout-without-auto"),
    pytest.param({"load": {"stages": None, "profile": "breakpoint", "warmupTimeout": "10m"}},
                 "spec.load", "warmupTimeout must be shorter than duration", id="warmup-timeout-too-long"),
    pytest.param({"faults": [{"at": "3m"}]},
                 "spec.faults[0]", "exactly one action", id="fault-without-action"),
    pytest.param({"faults": [{"at": "3m", "killPod": {"deployment": "registry"},
                              "restart": {"deployment": "gateway"}}]},
                 "spec.faults[0]", "exactly one action", id="fault-with-two-actions"),
    pytest.param({"faults": [{"at": "3m", "resources": {"deployment": "ingestor"}}]},
                 "spec.faults[0].resources", "memory or cpu", id="fault-resources-empty"),
    pytest.param({"faults": [{"at": "20m", "killPod": {"deployment": "registry"}}]},
                 "spec", "before the load ends", id="fault-after-the-load"),
    pytest.param({"slo": [{"metric": "lost_requests", "promql": "up", "op": "==", "value": 0}]},
                 "spec.slo[0]", "exactly one of metric or promql", id="slo-metric-and-promql"),
    pytest.param({"slo": [{"metric": "lost_requests", "endpoint": "getData", "op": "==", "value": 0}]},
                 "spec.slo[0]", "endpoint applies only", id="slo-endpoint-on-a-ledger-metric"),
    pytest.param({"sweep": {"system.replicas.database": [1, 2]}},
                 "spec", "without spec.target, spec.system and system sweeps set only Elves' deployments",
                 id="sweep-unknown-deployment"),
    pytest.param({"sweep": {"system.database": [1, 2]}}, "spec", "sweep keys are", id="sweep-unknown-key"),
    pytest.param({"system": {"replicas": {"orders-worker": 2}}},
                 "spec", "without spec.target, spec.system and system sweeps set only Elves' deployments",
                 id="replicas-of-another-systems-workload-without-a-target"),
    # An author could otherwise set the JWT secret, point the datasource elsewhere or load code
    # into the JVM: a LoadTest must not change who the system trusts.
    pytest.param({"system": {"env": {"gateway": {"ELVES_JWT_SECRET": "mine-mine-mine-mine-mine-mine-mine"}}}},
                 "spec", "their resources and their declared tunables", id="env-jwt-secret"),
    pytest.param({"system": {"env": {"registry": {"SPRING_DATASOURCE_URL": "jdbc:postgresql://evil/x"}}}},
                 "spec", "their resources and their declared tunables", id="env-datasource"),
    pytest.param({"system": {"env": {"ingestor": {"JAVA_TOOL_OPTIONS": "-javaagent:/tmp/x.jar"}}}},
                 "spec", "their resources and their declared tunables", id="env-java-tool-options"),
    pytest.param({"baseline": {"loadTest": None, "pick": None}}, "spec.baseline", "exactly one of report",
                 id="baseline-neither-file-nor-loadtest"),
    pytest.param({"baseline": {"loadTest": None}}, "spec.baseline", "pick chooses among the reports of loadTest",
                 id="baseline-pick-without-loadtest"),
    # Its autoscaler owns an autoscaled deployment's replicas: a scale fault would be undone.
    pytest.param({"system": {"replicas": None, "autoscaling": {"ingestor": {"maxReplicas": 6}}}, "sweep": None},
                 "spec", "faults: a scale fault on the ingestor, which system.autoscaling.ingestor autoscales",
                 id="scale-fault-on-an-autoscaled-deployment"),
    pytest.param({"sweep": {"system.autoscaling.ingestor.mode": ["fixed", "keda"]}},
                 "spec", "faults: a scale fault on the ingestor", id="scale-fault-on-a-swept-autoscaler"),
    pytest.param({"system": {"autoscaling": {"ingestor": {}}}, "faults": [], "sweep": None},
                 "spec.system", "replicas.ingestor: the ingestor is autoscaled", id="fixed-replicas-and-autoscaler"),
    pytest.param({"system": {"autoscaling": {"ingestor": {"minReplicas": 6, "maxReplicas": 5}}}},
                 "spec.system.autoscaling.ingestor", "minReplicas must not be above maxReplicas",
                 id="autoscaling-bounds"),
]


def merged(base: dict[str, Any], fragment: dict[str, Any]) -> dict[str, Any]:
    """base with fragment laid over it: dicts merge, anything else replaces, None deletes."""
    result = copy.deepcopy(base)
    for key, value in fragment.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merged(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def loadtest(name: str, spec: dict[str, Any]) -> str:
    return json.dumps({"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest",
                       "metadata": {"name": name, "namespace": NAMESPACE}, "spec": spec})


@pytest.fixture(scope="module")
def loadtest_crd(control_plane: cp.ControlPlane) -> dict[str, Any]:
    """The chart's LoadTest CRD, installed and Established, and a namespace to apply into."""
    assert CRD_FILE.exists(), f"{CRD_FILE.relative_to(cp.REPO)} is not there (it is generated from the engine's models)"
    # The SystemUnderTest CRD too: an example of benchmarking one's own system holds one.
    control_plane.install_crds(CRD_FILE, CRD_FILE.with_name("systemundertests.elves.dev.yaml"))
    control_plane.kubectl("create", "namespace", NAMESPACE)
    return json.loads(control_plane.kubectl("get", "crd", "loadtests.elves.dev", "-o", "json").stdout)


def dry_run_apply(plane: cp.ControlPlane, manifest: str) -> Any:
    return plane.kubectl("apply", "--dry-run=server", "-f", "-", stdin=manifest, check=False)


def test_the_crd_has_the_agreed_names_and_a_status_subresource(loadtest_crd: dict[str, Any]) -> None:
    spec = loadtest_crd["spec"]
    assert spec["group"] == "elves.dev"
    assert spec["scope"] == "Namespaced"
    assert spec["names"]["kind"] == "LoadTest"
    assert "lt" in spec["names"].get("shortNames", [])
    (version,) = [v for v in spec["versions"] if v["name"] == "v1alpha1"]
    assert version["served"] and version["storage"]
    assert "status" in version.get("subresources", {})


def test_kubectl_get_lt_shows_the_printer_columns(control_plane: cp.ControlPlane,
                                                  loadtest_crd: dict[str, Any]) -> None:
    control_plane.kubectl("apply", "-f", "-", stdin=loadtest("columns", VALID_SPEC))
    header = control_plane.kubectl("get", "lt", "-n", NAMESPACE).stdout.splitlines()[0].split()
    for column in ("PHASE", "VERDICT", "AGE"):
        assert column in header, f"`kubectl get lt` shows {header}, without {column}"


def test_there_are_examples() -> None:
    assert EXAMPLES, "loadtests/examples/ has no LoadTest"


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_every_example_is_accepted(control_plane: cp.ControlPlane, loadtest_crd: dict[str, Any],
                                   example: Path) -> None:
    manifest = example.read_text()
    assert any(doc and doc.get("kind") == "LoadTest" for doc in yaml.safe_load_all(manifest)), \
        f"{example.name} holds no LoadTest"
    result = control_plane.kubectl("apply", "--dry-run=server", "-n", NAMESPACE, "-f", str(example),
                                   check=False)
    assert result.returncode == 0, f"{example.name} was rejected: {result.stderr}"


def test_the_base_spec_is_accepted(control_plane: cp.ControlPlane,
                                   loadtest_crd: dict[str, Any]) -> None:
    result = dry_run_apply(control_plane, loadtest("base", VALID_SPEC))
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(("fragment", "field"), INVALID_SPECS)
def test_an_invalid_spec_is_rejected_naming_the_field(
        control_plane: cp.ControlPlane, loadtest_crd: dict[str, Any],
        fragment: dict[str, Any], field: str) -> None:
    result = dry_run_apply(control_plane, loadtest("invalid", merged(VALID_SPEC, fragment)))
    assert result.returncode != 0, f"accepted: {fragment}"
    assert field in result.stderr, f"the error does not name {field}: {result.stderr}"


@pytest.mark.parametrize(("fragment", "where", "says"), BROKEN_RULES)
def test_a_spec_breaking_a_rule_across_fields_is_rejected_saying_which(
        control_plane: cp.ControlPlane, loadtest_crd: dict[str, Any],
        fragment: dict[str, Any], where: str, says: str) -> None:
    result = dry_run_apply(control_plane, loadtest("invalid", merged(VALID_SPEC, fragment)))
    assert result.returncode != 0, f"accepted: {fragment}"
    assert f"{where}: Invalid value" in result.stderr and says in result.stderr, \
        f"the error does not say {says!r} about {where}: {result.stderr}"


def test_another_systems_workloads_are_set_and_swept_in_a_test_that_names_its_target(
        control_plane: cp.ControlPlane, loadtest_crd: dict[str, Any]) -> None:
    """Workload names the CRD cannot know: what the SystemUnderTest offers is the operator's check
    (elves.engine.models.settable); the CRD takes any workload name and a grid of three keys."""
    spec = merged(VALID_SPEC, {"target": {"systemUnderTest": "orders"}, "faults": None, "reset": None, "system": None})
    spec["system"] = {"replicas": {"orders-worker": 2}, "env": {"orders-worker": {"WORKER_CONCURRENCY": "4"}},
                      "resources": {"orders-worker": {"memory": "256Mi"}}}
    spec["sweep"] = {"system.replicas.orders-worker": [1, 2], "system.env.orders-worker.WORKER_DELAY": ["5ms"],
                     "load.mix.getData": [1, 2]}
    result = dry_run_apply(control_plane, loadtest("foreign", spec))
    assert result.returncode == 0, result.stderr


def test_a_baseline_file_is_refused_naming_the_field_and_a_baseline_by_loadtest_is_accepted(
        control_plane: cp.ControlPlane, loadtest_crd: dict[str, Any]) -> None:
    """The operator cannot read a file on the machine that wrote the LoadTest: on a cluster the
    earlier run is named by its LoadTest (the local mode reads the same models, and files)."""
    by_file = merged(VALID_SPEC, {"baseline": {"loadTest": None, "pick": None, "report": "reports/case-3/summary.json"}})
    result = dry_run_apply(control_plane, loadtest("by-file", by_file))
    assert result.returncode != 0, "a baseline file was accepted"
    assert "spec.baseline.report: Forbidden: report is a file path, which the operator cannot read" in result.stderr \
        and "baseline: {loadTest: NAME, pick: lastPassed}" in result.stderr, result.stderr
    for baseline in ({"loadTest": "x", "pick": "lastPassed"}, {"loadTest": "x"}):
        accepted = dry_run_apply(control_plane, loadtest("by-loadtest", {**VALID_SPEC, "baseline": baseline}))
        assert accepted.returncode == 0, f"{baseline}: {accepted.stderr}"


def _set_status(plane: cp.ControlPlane, name: str, status: dict[str, Any]) -> Any:
    return plane.kubectl("patch", "lt", name, "-n", NAMESPACE, "--subresource=status", "--type=merge",
                         "-p", json.dumps({"status": status}), check=False)


def test_the_spec_cannot_change_while_the_test_runs(control_plane: cp.ControlPlane,
                                                   loadtest_crd: dict[str, Any]) -> None:
    control_plane.kubectl("apply", "-f", "-", stdin=loadtest("immutable", VALID_SPEC))
    for phase, replicas, allowed in (("Pending", 2, True), ("Running", 3, False), ("Analyzing", 3, False),
                                     ("Succeeded", 3, True)):
        assert _set_status(control_plane, "immutable", {"phase": phase}).returncode == 0
        changed = merged(VALID_SPEC, {"system": {"replicas": {"ingestor": replicas}}})
        result = control_plane.kubectl("apply", "-f", "-", stdin=loadtest("immutable", changed), check=False)
        assert (result.returncode == 0) == allowed, f"{phase}: {result.stderr}"
        if not allowed:
            assert "spec cannot change while the test runs" in result.stderr, result.stderr
    # What kopf and the operator write (metadata, status) is never held back.
    assert control_plane.kubectl("annotate", "lt", "immutable", "-n", NAMESPACE, "elves.dev/x=1").returncode == 0


def test_conditions_are_a_map_keyed_by_type(control_plane: cp.ControlPlane, loadtest_crd: dict[str, Any]) -> None:
    control_plane.kubectl("apply", "-f", "-", stdin=loadtest("conditions", VALID_SPEC))
    condition = {"type": "Completed", "status": "True", "reason": "Succeeded", "message": "",
                 "lastTransitionTime": "2026-11-23T23:00:00Z", "observedGeneration": 1}
    assert _set_status(control_plane, "conditions", {"conditions": [condition]}).returncode == 0
    twice = _set_status(control_plane, "conditions", {"conditions": [condition, {**condition, "status": "False"}]})
    assert twice.returncode != 0 and "Duplicate value" in twice.stderr, twice.stderr
    schema = loadtest_crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    conditions = schema["properties"]["status"]["properties"]["conditions"]
    assert (conditions["x-kubernetes-list-type"], conditions["x-kubernetes-list-map-keys"]) == ("map", ["type"])
