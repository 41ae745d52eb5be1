"""The system's Deployments and StatefulSets as plain dicts: what to snapshot, how to patch
them, and whether they are ready. No API calls here; elves.k8s.platform makes them.

A service's container has the Deployment's name (docs/architecture.md, "Kubernetes"); another
system's container is named by elves.k8s.target_workloads.
Env and resources are changed with JSON patches that first `test` the container's name
at its index, so a patch never lands on the wrong container.
"""

from __future__ import annotations

import copy
from datetime import datetime, timezone
from typing import Any

from elves.engine.models.status import ContainerResources, DeploymentSnapshot, EnvVar, WorkloadSnapshot
from elves.engine.models.units import Cpu, Memory, parse_cpu, parse_memory

RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"  # the annotation `kubectl rollout restart` sets


class WorkloadError(RuntimeError):
    """The Deployment is not shaped as the chart makes it."""


def container_index(workload: dict[str, Any], container: str | None = None) -> tuple[int, dict[str, Any]]:
    """The container named `container` (default: the workload's own name, as every Elves service's)."""
    name = workload["metadata"]["name"]
    containers = workload["spec"]["template"]["spec"].get("containers") or []
    wanted = container or name
    for index, found in enumerate(containers):
        if found.get("name") == wanted:
            return index, found
    raise WorkloadError(f"{workload.get('kind') or 'Deployment'} {name} has no container named {wanted} "
                        f"(containers: {', '.join(c.get('name', '?') for c in containers)})")


def snapshot(deployment: dict[str, Any]) -> DeploymentSnapshot:
    """What a test may change and the end of the test puts back."""
    _, container = container_index(deployment)
    return DeploymentSnapshot(replicas=deployment["spec"].get("replicas", 1),
                              resources=ContainerResources.model_validate(container.get("resources") or {}),
                              env=[EnvVar.model_validate(e) for e in container.get("env") or []])


def _container_ops(deployment: dict[str, Any], changes: dict[str, Any],
                   container_name: str | None = None) -> list[dict[str, Any]]:
    index, container = container_index(deployment, container_name)
    path = f"/spec/template/spec/containers/{index}"
    # An empty env or resources is as good as none: no patch (and no rollout) to say so.
    ops = [{"op": "add", "path": f"{path}/{key}", "value": value}
           for key, value in changes.items() if (container.get(key) or None) != (value or None)]
    return [{"op": "test", "path": f"{path}/name", "value": container["name"]}] + ops if ops else []


def restore_ops(deployment: dict[str, Any], wanted: DeploymentSnapshot | WorkloadSnapshot,
                container: str | None = None) -> list[dict[str, Any]]:
    """JSON patch putting env and resources back as snapshotted ([] when nothing differs or
    nothing of them was snapshotted)."""
    dumped = wanted.model_dump(by_alias=True, exclude_none=True)
    return _container_ops(deployment, {k: dumped[k] for k in ("env", "resources") if k in dumped}, container)


def _merged_env(container: dict[str, Any], env: dict[str, str]) -> list[dict[str, Any]]:
    merged = copy.deepcopy(container.get("env") or [])
    for name, value in env.items():
        entry = {"name": name, "value": value}
        for i, existing in enumerate(merged):
            if existing.get("name") == name:
                merged[i] = entry  # also replaces a valueFrom
                break
        else:
            merged.append(entry)
    return merged


def _limited(container: dict[str, Any], memory: Memory | None, cpu: Cpu | None) -> dict[str, Any]:
    resources = copy.deepcopy(container.get("resources") or {})
    limits, requests = resources.setdefault("limits", {}), resources.get("requests") or {}
    for key, value, amount, parse in (("memory", memory, memory and memory.bytes, parse_memory),
                                      ("cpu", cpu, cpu and cpu.cores, parse_cpu)):
        if value is None:
            continue
        limits[key] = value.text
        # The request as the API has it (a quantity string) against the new limit.
        if key in requests and parse(str(requests[key])) > amount:
            requests[key] = value.text  # a request may not exceed its limit
    return resources


def change_ops(deployment: dict[str, Any], env: dict[str, str] | None = None,
               memory: Memory | None = None, cpu: Cpu | None = None,
               container_name: str | None = None) -> list[dict[str, Any]]:
    """JSON patch setting env variables (by name, in place; new ones appended; others stay)
    and memory/CPU limits (a request above its new limit comes down to it) of the container
    container_index picks."""
    _, container = container_index(deployment, container_name)
    changes: dict[str, Any] = {}
    if env:
        changes["env"] = _merged_env(container, env)
    if memory is not None or cpu is not None:
        changes["resources"] = _limited(container, memory, cpu)
    return _container_ops(deployment, changes, container_name)


def restart_patch(now: float) -> dict[str, Any]:
    """A strategic merge patch doing what `kubectl rollout restart` does."""
    stamp = datetime.fromtimestamp(now, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: stamp}}}}}


def deployment_not_ready(deployment: dict[str, Any]) -> str | None:
    """Why a Deployment does not run its desired replicas, all updated and ready; None when it does."""
    name = deployment["metadata"]["name"]
    wanted = deployment["spec"].get("replicas", 1)
    status = deployment.get("status") or {}
    generation, observed = deployment["metadata"].get("generation", 0), status.get("observedGeneration")
    if observed is None or observed < generation:
        return f"{name}: the change is not rolled out yet (generation {generation}, observed {observed or 0})"
    updated, ready, total = (status.get(k) or 0 for k in ("updatedReplicas", "readyReplicas", "replicas"))
    if updated < wanted:
        return f"{name}: {updated} of {wanted} replicas updated"
    if ready < wanted:
        return f"{name}: {ready} of {wanted} replicas ready"
    if total > wanted:
        return f"{name}: {total - wanted} old replica(s) still running"
    return None


def statefulset_not_ready(statefulset: dict[str, Any]) -> str | None:
    """Why a StatefulSet does not run its desired replicas, all ready (and, where its controller
    reports them, the change observed and every replica updated); None when it does."""
    name = statefulset["metadata"]["name"]
    wanted = statefulset["spec"].get("replicas", 1)
    status = statefulset.get("status") or {}
    generation, observed = statefulset["metadata"].get("generation", 0), status.get("observedGeneration")
    if observed is not None and observed < generation:
        return f"{name}: the change is not rolled out yet (generation {generation}, observed {observed})"
    if "updatedReplicas" in status and (status["updatedReplicas"] or 0) < wanted:
        return f"{name}: {status['updatedReplicas'] or 0} of {wanted} replicas updated"
    ready = status.get("readyReplicas") or 0
    return None if ready >= wanted else f"{name}: {ready} of {wanted} replicas ready"


def pick_pod(pods: list[dict[str, Any]], choose=None) -> dict[str, Any] | None:
    """A pod to kill: one that runs and is not already going (`choose` picks among them)."""
    alive = [p for p in pods if not p["metadata"].get("deletionTimestamp")
             and (p.get("status") or {}).get("phase") in ("Running", "Pending")]
    running = [p for p in alive if p["status"].get("phase") == "Running"] or alive
    if not running:
        return None
    running.sort(key=lambda p: p["metadata"]["name"])
    return choose(running) if choose else running[0]
