"""The system's Deployments as data: snapshot, patches, readiness; faults as API calls; and
what only the local mode can do."""

from __future__ import annotations

import base64
import copy
from datetime import datetime, timezone
from typing import Any

import pytest

from elves.engine.models.faults import Fault
from elves.engine.models.loadtest import parse_loadtest
from elves.engine.models.status import ContainerWatch, EnvVar, SystemSnapshot
from elves.engine.models.units import Cpu, Memory
from elves.k8s import workloads
from elves.k8s.faults import INFRA_STOP_COMMANDS, INFRA_STOP_SECONDS, KILL_SECONDS, Caps, cluster_problems
from elves.k8s.names import Owner
from elves.k8s.platform import KubernetesPlatform, LoadError
from elves.k8s.settings import OperatorSettings


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
    """RFC 6902 `test`, `add` and `remove` on object members: all these patches use."""
    result = copy.deepcopy(document)
    for op in ops:
        *parents, last = op["path"].lstrip("/").split("/")
        node: Any = result
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        key = int(last) if isinstance(node, list) else last
        if op["op"] == "test":
            assert node[key] == op["value"], f"test failed at {op['path']}"
        elif op["op"] == "remove":
            del node[key]
        else:
            assert op["op"] == "add"
            node[key] = op["value"]
    return result


def service_container(document: dict[str, Any]) -> dict[str, Any]:
    return document["spec"]["template"]["spec"]["containers"][1]


def test_the_snapshot_is_replicas_resources_and_env_of_the_service_container():
    snap = workloads.snapshot(deployment())
    assert snap.replicas == 2
    assert (snap.resources.requests, snap.resources.limits) == ({"memory": "1Gi", "cpu": "250m"}, {"memory": "2Gi"})
    assert [e.name for e in snap.env] == ["SERVER_PORT", "ELVES_JWT_SECRET"]
    assert snap.env[1].value_from == {"secretKeyRef": {"name": "elves", "key": "jwt-secret"}}


def test_env_changes_set_variables_by_name_and_keep_the_others():
    ops = workloads.change_ops(deployment(), env={"SERVER_PORT": "9090", "ELVES_INGESTOR_CONCURRENCY": "4",
                                                  "ELVES_JWT_SECRET": "plain"})
    assert ops[0] == {"op": "test", "path": "/spec/template/spec/containers/1/name", "value": "ingestor"}
    env = service_container(apply(deployment(), ops))["env"]
    assert env == [{"name": "SERVER_PORT", "value": "9090"}, {"name": "ELVES_JWT_SECRET", "value": "plain"},
                   {"name": "ELVES_INGESTOR_CONCURRENCY", "value": "4"}]


def test_a_lower_memory_limit_brings_the_request_down_with_it():
    ops = workloads.change_ops(deployment(), memory=Memory.parse("512Mi"), cpu=Cpu.parse("500m"))
    resources = service_container(apply(deployment(), ops))["resources"]
    assert resources == {"requests": {"memory": "512Mi", "cpu": "250m"}, "limits": {"memory": "512Mi", "cpu": "500m"}}


def test_restoring_puts_env_and_resources_back_and_does_nothing_when_nothing_changed():
    original = deployment()
    snap = workloads.snapshot(original)
    changed = apply(original, workloads.change_ops(original, env={"X": "1"}, memory=Memory.parse("512Mi")))
    restored = apply(changed, workloads.restore_ops(changed, snap))
    assert service_container(restored) == service_container(original)
    assert workloads.restore_ops(original, snap) == []


def test_a_container_without_env_or_resources_is_put_back_without_a_patch():
    # The snapshot of a bare container holds env [] and resources {}: as good as none, so the
    # restore changes nothing (a patch to say so would be a needless write, maybe a rollout).
    bare = deployment()
    del bare["spec"]["template"]["spec"]["containers"][1]["env"]
    del bare["spec"]["template"]["spec"]["containers"][1]["resources"]
    assert workloads.restore_ops(bare, workloads.snapshot(bare)) == []
    changed = apply(bare, workloads.change_ops(bare, env={"ELVES_INGESTOR_CONCURRENCY": "4"}))
    restored = apply(changed, workloads.restore_ops(changed, workloads.snapshot(bare)))
    assert restored["spec"]["template"]["spec"]["containers"][1].get("env") == []  # the API server drops it


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


class RecordingKube:
    """The Kube calls a fault makes, recorded; pods and deployments from plain data."""

    def __init__(self, pods: list[dict[str, Any]] | None = None, exec_error: Exception | None = None,
                 autoscalers: list[dict[str, Any]] | None = None):
        self.calls: list[tuple[Any, ...]] = []  # what changed something
        self.reads: list[tuple[Any, ...]] = []
        self.pods_by_name = {p["metadata"]["name"]: p for p in pods or []}
        self.exec_error = exec_error
        # The system's ScaledObjects and HPAs by (kind, name), as the API server would keep them.
        self.autoscalers = {(o["kind"], o["metadata"]["name"]): copy.deepcopy(o) for o in autoscalers or []}

    def autoscaler(self, namespace: str, kind: Any, name: str) -> dict[str, Any] | None:
        self.reads.append(("get", kind.plural, name))
        return copy.deepcopy(self.autoscalers.get((kind.kind, name)))

    def create_autoscaler(self, kind: Any, body: dict[str, Any]) -> None:
        key = (kind.kind, body["metadata"]["name"])
        assert key not in self.autoscalers, f"409: {key} exists"
        self.calls.append(("create", kind.plural, body["metadata"]["name"]))
        self.autoscalers[key] = copy.deepcopy(body)

    def patch_autoscaler(self, namespace: str, kind: Any, name: str, ops: list[dict[str, Any]]) -> None:
        self.calls.append(("patch", kind.plural, name))
        self.autoscalers[(kind.kind, name)] = apply(self.autoscalers[(kind.kind, name)], ops)

    def delete_autoscaler(self, namespace: str, kind: Any, name: str) -> bool:
        self.calls.append(("delete", kind.plural, name))
        return self.autoscalers.pop((kind.kind, name), None) is not None

    def deployment(self, namespace: str, name: str) -> dict[str, Any]:
        return deployment(name)

    def scale_deployment(self, namespace: str, name: str, replicas: int) -> None:
        self.calls.append(("scale", name, replicas))

    def patch_deployment(self, namespace: str, name: str, patch: Any) -> None:
        self.calls.append(("patch", name, patch))

    def delete_pod(self, namespace: str, name: str, grace_seconds: int | None = None) -> bool:
        self.calls.append(("delete_pod", name, grace_seconds))
        return self.pods_by_name.pop(name, None) is not None or name.endswith("-0")

    def pods(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        return list(self.pods_by_name.values())

    def pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.pods_by_name.get(name)

    def secret(self, namespace: str, name: str) -> dict[str, Any]:
        return {"data": {"jwt-secret": base64.b64encode(b"k" * 64).decode()}}

    def exec_in_pod(self, namespace: str, name: str, container: str, command: list[str]) -> str:
        self.calls.append(("exec", name, container, tuple(command)))
        if self.exec_error is not None:
            raise self.exec_error
        return ""


def a_platform(kube: RecordingKube) -> KubernetesPlatform:
    return KubernetesPlatform(OperatorSettings(), kube, Owner("team", "t", "u"), clock=lambda: 0.0)  # type: ignore[arg-type]


def action(**fault: Any):
    return Fault.model_validate({"at": "5s", **fault}).action


def test_scale_becomes_one_api_call():
    kube = RecordingKube()
    applied = a_platform(kube).apply_fault(action(scale={"deployment": "ingestor", "replicas": 0}), now=0.0)
    assert kube.calls == [("scale", "ingestor", 0)] and applied.watch is None


def infra_pod(component: str, restarts: int = 0, running: bool = True) -> dict[str, Any]:
    state = {"running": {"startedAt": "t"}} if running else {"terminated": {"exitCode": 0}}
    return {"metadata": {"name": f"{component}-0"}, "status": {"phase": "Running", "containerStatuses": [
        {"name": component, "containerID": f"containerd://{restarts}", "restartCount": restarts, "state": state}]}}


@pytest.mark.parametrize("component", ["rabbitmq", "postgres"])
def test_restart_infra_stops_the_container_cleanly_and_keeps_the_pod_and_its_data(component):
    # With persistence off the data is on an emptyDir, which lives as long as the pod: the
    # container is stopped (and started again by the kubelet), the pod is never deleted.
    kube = RecordingKube([infra_pod(component)])
    platform = a_platform(kube)
    applied = platform.apply_fault(action(restartInfra={"component": component}), now=1000.0)
    assert kube.calls == [("exec", f"{component}-0", component, tuple(INFRA_STOP_COMMANDS[component]))]
    watch = applied.watch
    assert (watch.pod, watch.container, watch.restart_count) == (f"{component}-0", component, 0)
    assert watch.deadline.timestamp() == 1000.0 + INFRA_STOP_SECONDS
    assert platform.observe_fault(watch, now=1001.0) is None
    kube.pods_by_name[f"{component}-0"] = infra_pod(component, restarts=1)
    assert platform.observe_fault(watch, now=1010.0).startswith(f"stopped container {component} in pod {component}-0")
    assert not [call for call in kube.calls if call[0] == "delete_pod"]


def test_restart_infra_never_deletes_the_pod_even_when_the_stop_fails():
    kube = RecordingKube([infra_pod("postgres")], exec_error=OSError("network unreachable"))
    with pytest.raises(LoadError, match="exec into pod elves/postgres-0 failed .network unreachable.; not deleting"):
        a_platform(kube).apply_fault(action(restartInfra={"component": "postgres"}), now=0.0)
    kube = RecordingKube([infra_pod("rabbitmq")])
    platform = a_platform(kube)
    watch = platform.apply_fault(action(restartInfra={"component": "rabbitmq"}), now=0.0).watch
    assert "still ran 90s after it was asked to stop" in platform.observe_fault(watch, now=INFRA_STOP_SECONDS + 1)
    assert [call[0] for call in kube.calls] == ["exec"]
    with pytest.raises(LoadError, match="pod postgres-0 not found"):
        a_platform(RecordingKube()).apply_fault(action(restartInfra={"component": "postgres"}), now=0.0)
    restarting = a_platform(RecordingKube([infra_pod("postgres", running=False)]))
    assert "not running (restarting already)" in restarting.apply_fault(
        action(restartInfra={"component": "postgres"}), now=0.0).message


def test_restart_and_resources_patch_the_deployment():
    kube = RecordingKube()
    platform = a_platform(kube)
    platform.apply_fault(action(restart={"deployment": "gateway"}), now=0.0)
    applied = platform.apply_fault(action(resources={"deployment": "ingestor", "memory": "512Mi"}), now=0.0)
    (restart, resources) = kube.calls
    assert restart[:2] == ("patch", "gateway") and "kubectl.kubernetes.io/restartedAt" in str(restart[2])
    assert resources[:2] == ("patch", "ingestor") and applied.message == \
        "Deployment ingestor: limits memory 512Mi (a rolling update)"


def test_a_fault_without_a_cluster_equivalent_is_refused():
    with pytest.raises(ValueError, match="'pause' is not possible on a cluster"):
        a_platform(RecordingKube()).apply_fault(action(pause={"deployment": "gateway", "for": "1s"}), now=0.0)


def registry_pod(restarts: int = 0, running: bool = True) -> dict[str, Any]:
    state = {"running": {"startedAt": "t"}} if running else {"terminated": {"exitCode": 137}}
    return {"metadata": {"name": "registry-1"}, "status": {"phase": "Running", "containerStatuses": [
        {"name": "registry", "containerID": f"containerd://{restarts}", "restartCount": restarts, "state": state}]}}


def test_kill_pod_sends_the_kill_and_returns_at_once_with_a_deadline_to_watch():
    kube = RecordingKube([registry_pod()])
    platform = a_platform(kube)
    applied = platform.apply_fault(action(killPod={"deployment": "registry"}), now=1000.0)
    assert kube.calls == [("exec", "registry-1", "registry", ("sh", "-c", "kill -9 -1"))]
    watch = applied.watch
    assert (watch.pod, watch.container, watch.container_id, watch.restart_count) == \
        ("registry-1", "registry", "containerd://0", 0)
    assert watch.deadline.timestamp() == 1000.0 + KILL_SECONDS
    # Later ticks: still running before the deadline, nothing done; dead -> the message.
    assert platform.observe_fault(watch, now=1001.0) is None
    kube.pods_by_name["registry-1"] = registry_pod(restarts=1)
    assert platform.observe_fault(watch, now=1002.0).startswith("killed the main process of container registry")
    assert [call[0] for call in kube.calls] == ["exec"]


def test_a_container_still_running_at_the_deadline_has_its_pod_deleted():
    kube = RecordingKube([registry_pod()])
    platform = a_platform(kube)
    watch = ContainerWatch(pod="registry-1", container="registry", container_id="containerd://0", restart_count=0,
                           deadline=datetime.fromtimestamp(1030.0, tz=timezone.utc))
    assert platform.observe_fault(watch, now=1029.0) is None
    message = platform.observe_fault(watch, now=1030.5)
    assert kube.calls == [("delete_pod", "registry-1", 0)]
    assert message.startswith("deleted pod registry-1 of registry without a grace period (kill -9 through exec left")


def test_a_refused_exec_deletes_the_pod_at_once():
    kube = RecordingKube([registry_pod()], exec_error=OSError("network unreachable"))
    applied = a_platform(kube).apply_fault(action(killPod={"deployment": "registry"}), now=0.0)
    assert applied.watch is None and kube.calls[-1] == ("delete_pod", "registry-1", 0)
    assert "exec into it failed: network unreachable" in applied.message


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


def _fake(bin_dir, name: str, script: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)


def test_a_reset_purges_the_queues_that_exist_and_empties_the_database(tmp_path):
    """The commands a reset runs in rabbitmq-0 and postgres-0, run here against stand-ins
    for rabbitmqctl and psql that record what they were asked."""
    import os
    import subprocess

    from elves.constants import EMPTY_DATABASE_SQL, WORK_QUEUES
    from elves.k8s.platform import EMPTY_DATABASE_COMMAND, PURGE_QUEUES_COMMAND
    calls = tmp_path / "calls"
    existing = "\\n".join(WORK_QUEUES)  # the dead-letter queues do not exist yet
    _fake(tmp_path, "rabbitmqctl", f'echo "$*" >>{calls}\n'
                                   f'if [ "$2" = list_queues ]; then printf "{existing}\\n"; fi\n')
    _fake(tmp_path, "psql", f'echo "PGPASSWORD=$PGPASSWORD $*" >>{calls}\n')
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}", "POSTGRES_USER": "superuser",
           "POSTGRES_DB": "elves", "POSTGRES_PASSWORD": "superuser's", "ELVES_RESET_ROLE": "elves_reset",
           "ELVES_RESET_PASSWORD": "s3cret"}
    assert subprocess.run(PURGE_QUEUES_COMMAND, env=env, timeout=30).returncode == 0
    assert subprocess.run(EMPTY_DATABASE_COMMAND, env=env, timeout=30).returncode == 0
    lines = calls.read_text().splitlines()
    assert lines[0] == "-q list_queues --no-table-headers name"
    assert lines[1:4] == [f"-q purge_queue {queue}" for queue in WORK_QUEUES]
    # As the reset role, never as the superuser.
    assert lines[4].startswith("PGPASSWORD=s3cret -v ON_ERROR_STOP=1 -q -h 127.0.0.1 -U elves_reset -d elves -c ")
    assert EMPTY_DATABASE_SQL.strip().splitlines()[-1] in lines  # the SQL arrives whole, as psql's -c
    # A broker that does not answer fails the reset (and so the test, naming it).
    _fake(tmp_path, "rabbitmqctl", "echo 'Error: unable to perform an operation on node' >&2; exit 69\n")
    assert subprocess.run(PURGE_QUEUES_COMMAND, env=env, timeout=30).returncode != 0


class ResetKube:
    """What KubernetesPlatform.reset asks of the API: pods, exec, deployment patches."""

    def __init__(self, pods, exit_code=0):
        self.pods, self.exit_code, self.execs, self.patched = pods, exit_code, [], []

    def pod(self, namespace, name):
        return {"metadata": {"name": name}} if name in self.pods else None

    def run_in_pod(self, namespace, name, container, command):
        self.execs.append((namespace, name, container))
        return self.exit_code, "ERROR:  relation is locked" if self.exit_code else ""

    def patch_deployment(self, namespace, name, patch):
        self.patched.append(name)


def _reset_platform(kube):
    from elves.k8s.platform import KubernetesPlatform
    from elves.k8s.settings import OperatorSettings
    return KubernetesPlatform(OperatorSettings(system_namespace="elves"), kube, Owner("team-a", "lt", "u"),
                              clock=lambda: 0.0)


def test_a_reset_on_a_cluster_empties_then_restarts_and_names_what_failed():
    from elves.k8s.platform import LoadError
    kube = ResetKube({"rabbitmq-0", "postgres-0"})
    _reset_platform(kube).reset()
    assert kube.execs == [("elves", "rabbitmq-0", "rabbitmq"), ("elves", "postgres-0", "postgres")]
    assert kube.patched == ["gateway", "registry", "ingestor"]
    # An external database (no postgres-0): the queues are still purged.
    external = ResetKube({"rabbitmq-0"})
    _reset_platform(external).reset()
    assert external.execs == [("elves", "rabbitmq-0", "rabbitmq")]
    failing = ResetKube({"rabbitmq-0", "postgres-0"}, exit_code=1)
    with pytest.raises(LoadError, match="in pod elves/rabbitmq-0 failed \\(exit code 1\\)"):
        _reset_platform(failing).reset()
    assert failing.patched == []


def test_more_than_the_caps_allow_is_refused_naming_the_field():
    caps = Caps(max_replicas=4, max_memory_bytes=1024**3)
    problems = cluster_problems(spec(
        system={"replicas": {"ingestor": 5}, "resources": {"registry": {"memory": "2Gi"}}},
        sweep={"system.replicas.gateway": [1, 8]},
        faults=[{"at": "10s", "scale": {"deployment": "ingestor", "replicas": 50}},
                {"at": "20s", "resources": {"deployment": "ingestor", "memory": "8Gi"}}]), caps)
    fields = {p.split(":")[0] for p in problems}
    assert fields == {"spec.system.replicas.ingestor", "spec.system.resources.registry.memory",
                      "spec.system.replicas.gateway", "spec.faults[0].scale.replicas",
                      "spec.faults[1].resources.memory"}
    assert any("operator.limits.maxReplicas" in p and "sweep point 1" in p for p in problems)
    assert cluster_problems(spec(system={"replicas": {"ingestor": 4}}), caps) == []


def test_only_the_snapshot_the_operator_recorded_is_restored():
    kube = RecordingKube()
    platform = a_platform(kube)
    snapshot = platform.snapshot_system()
    assert snapshot.seal
    platform.restore_system(SystemSnapshot.model_validate(snapshot.model_dump()))  # as read back from status
    # Someone who may write the LoadTest's status slips a setting of their own into the snapshot.
    forged = snapshot.model_copy(deep=True)
    forged.deployments["gateway"].env.append(EnvVar(name="ELVES_JWT_SECRET", value="mine"))
    unsealed = snapshot.model_copy(update={"seal": None})
    for bad in (forged, unsealed):
        kube.calls.clear()
        with pytest.raises(LoadError, match="not what the operator recorded"):
            platform.restore_system(bad)
        assert kube.calls == [], "nothing patched"

