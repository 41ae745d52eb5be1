"""The system's Deployments as data: snapshot, patches, readiness; faults as API calls; and
what only the local mode can do."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from elves.engine.models import parse_loadtest
from elves.k8s import workloads
from elves.k8s.faults import FaultCall, cluster_problems, fault_call


def deployment(name: str = "ingestor", wanted: int = 2, **status: int) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "generation": 4},
        "spec": {"replicas": wanted, "template": {"spec": {"containers": [
            {"name": "sidecar", "image": "proxy"},
            {"name": name, "image": f"elves-{name}",
             "env": [{"name": "SERVER_PORT", "value": "8080"},
                     {"name": "ELVES_JWT_SECRET", "valueFrom": {"secretKeyRef": {"name": "elves", "key": "jwt-secret"}}}],
             "resources": {"requests": {"memory": "1Gi", "cpu": "250m"}, "limits": {"memory": "2Gi"}}},
        ]}}},
        "status": {"observedGeneration": 4, "replicas": wanted, "updatedReplicas": wanted,
                   "readyReplicas": wanted, **status},
    }


def apply(document: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """RFC 6902 `test` and `add` on object members: all these patches use."""
    result = copy.deepcopy(document)
    for op in ops:
        *parents, last = op["path"].lstrip("/").split("/")
        node: Any = result
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        key = int(last) if isinstance(node, list) else last
        if op["op"] == "test":
            assert node[key] == op["value"], f"test failed at {op['path']}"
        else:
            assert op["op"] == "add"
            node[key] = op["value"]
    return result


def service_container(document: dict[str, Any]) -> dict[str, Any]:
    return document["spec"]["template"]["spec"]["containers"][1]


def test_the_snapshot_is_replicas_resources_and_env_of_the_service_container():
    snap = workloads.snapshot(deployment())
    assert snap["replicas"] == 2
    assert snap["resources"] == {"requests": {"memory": "1Gi", "cpu": "250m"}, "limits": {"memory": "2Gi"}}
    assert [e["name"] for e in snap["env"]] == ["SERVER_PORT", "ELVES_JWT_SECRET"]


def test_env_changes_set_variables_by_name_and_keep_the_others():
    ops = workloads.change_ops(deployment(), env={"SERVER_PORT": "9090", "ELVES_INGESTOR_CONCURRENCY": "4",
                                                  "ELVES_JWT_SECRET": "plain"})
    assert ops[0] == {"op": "test", "path": "/spec/template/spec/containers/1/name", "value": "ingestor"}
    env = service_container(apply(deployment(), ops))["env"]
    assert env == [{"name": "SERVER_PORT", "value": "9090"}, {"name": "ELVES_JWT_SECRET", "value": "plain"},
                   {"name": "ELVES_INGESTOR_CONCURRENCY", "value": "4"}]


def test_a_lower_memory_limit_brings_the_request_down_with_it():
    ops = workloads.change_ops(deployment(), memory="512Mi", cpu="500m")
    resources = service_container(apply(deployment(), ops))["resources"]
    assert resources == {"requests": {"memory": "512Mi", "cpu": "250m"}, "limits": {"memory": "512Mi", "cpu": "500m"}}


def test_restoring_puts_env_and_resources_back_and_does_nothing_when_nothing_changed():
    original = deployment()
    snap = workloads.snapshot(original)
    changed = apply(original, workloads.change_ops(original, env={"X": "1"}, memory="512Mi"))
    restored = apply(changed, workloads.restore_ops(changed, snap))
    assert service_container(restored) == service_container(original)
    assert workloads.restore_ops(original, snap) == []


def test_a_deployment_without_its_named_container_is_refused_by_name():
    broken = deployment()
    broken["spec"]["template"]["spec"]["containers"] = [{"name": "main"}]
    with pytest.raises(workloads.WorkloadError, match="Deployment ingestor has no container named ingestor"):
        workloads.snapshot(broken)


@pytest.mark.parametrize("status, reason", [
    ({}, None),
    ({"observedGeneration": 3}, "ingestor: the change is not rolled out yet (generation 4, observed 3)"),
    ({"updatedReplicas": 1}, "ingestor: 1 of 2 replicas updated"),
    ({"readyReplicas": 1}, "ingestor: 1 of 2 replicas ready"),
    ({"replicas": 3}, "ingestor: 1 old replica(s) still running"),
])
def test_readiness_says_what_is_missing(status, reason):
    assert workloads.deployment_not_ready(deployment(**status)) == reason


def test_a_deployment_scaled_to_zero_is_ready():
    assert workloads.deployment_not_ready(deployment(wanted=0)) is None


def test_a_statefulset_is_ready_when_its_replicas_are():
    rabbitmq = {"metadata": {"name": "rabbitmq"}, "spec": {"replicas": 1}, "status": {}}
    assert workloads.statefulset_not_ready(rabbitmq) == "rabbitmq: 0 of 1 replicas ready"
    rabbitmq["status"]["readyReplicas"] = 1
    assert workloads.statefulset_not_ready(rabbitmq) is None


def test_the_restart_patch_is_what_kubectl_rollout_restart_does():
    patch = workloads.restart_patch(0.0)
    assert patch == {"spec": {"template": {"metadata": {"annotations": {
        "kubectl.kubernetes.io/restartedAt": "1970-01-01T00:00:00Z"}}}}}


def test_a_pod_to_kill_is_a_running_one_not_already_going():
    def pod(name: str, phase: str, deleting: bool = False) -> dict[str, Any]:
        meta = {"name": name, **({"deletionTimestamp": "2026-01-01T00:00:00Z"} if deleting else {})}
        return {"metadata": meta, "status": {"phase": phase}}
    pods = [pod("a", "Running", deleting=True), pod("b", "Pending"), pod("c", "Running"), pod("d", "Succeeded")]
    assert workloads.pick_pod(pods)["metadata"]["name"] == "c"
    assert workloads.pick_pod([pod("b", "Pending")])["metadata"]["name"] == "b"
    assert workloads.pick_pod([pod("d", "Failed")]) is None


@pytest.mark.parametrize("fault, call", [
    ({"at": 5, "scale": {"deployment": "ingestor", "replicas": 0}}, FaultCall("scale", "ingestor", replicas=0)),
    ({"at": 5, "killPod": {"deployment": "registry"}}, FaultCall("killPod", "registry")),
    ({"at": 5, "restart": {"deployment": "gateway"}}, FaultCall("restart", "gateway")),
    ({"at": 5, "restartInfra": {"component": "rabbitmq", "downFor": "0s"}}, FaultCall("restartInfra", pod="rabbitmq-0")),
    ({"at": 5, "restartInfra": {"component": "postgres"}}, FaultCall("restartInfra", pod="postgres-0")),
    ({"at": 5, "resources": {"deployment": "ingestor", "memory": "512Mi"}},
     FaultCall("resources", "ingestor", memory="512Mi")),
])
def test_each_fault_becomes_one_api_call(fault, call):
    assert fault_call(fault) == call


def test_a_fault_without_a_cluster_equivalent_is_refused():
    with pytest.raises(ValueError, match="'pause' is not possible on a cluster"):
        fault_call({"at": 1, "pause": {"deployment": "gateway", "for": "1s"}})


def spec(**parts: Any):
    body = {"load": {"scenario": "system-mix", "rate": "60/min", "duration": "1m"}, **parts}
    return parse_loadtest({"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest", "metadata": {"name": "t"},
                           "spec": body}).spec


def test_what_only_the_local_mode_can_do_is_named_by_field():
    problems = cluster_problems(spec(faults=[
        {"at": "10s", "scale": {"deployment": "ingestor", "replicas": 0}},
        {"at": "20s", "pause": {"deployment": "gateway", "for": "1.5s"}},
        {"at": "30s", "restartInfra": {"component": "rabbitmq", "downFor": "10s"}},
        {"at": "40s", "restartInfra": {"component": "postgres"}},
    ]))
    assert [p.split(":")[0] for p in problems] == ["spec.faults[1].pause", "spec.faults[2].restartInfra.downFor"]
    local_script = spec(load={"script": {"path": "custom.js"}, "rate": "60/min", "duration": "1m"})
    assert cluster_problems(local_script)[0].startswith("spec.load.script.path: a file path works in local mode only")
    assert cluster_problems(spec()) == []
