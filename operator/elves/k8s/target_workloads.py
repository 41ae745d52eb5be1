"""Faults and settings on another system's workloads: those its SystemUnderTest lists by name,
in the namespace it lives in (the LoadTest's, one the chart lets the operator serve). Nothing
else of that namespace is touched: elves.k8s.target refuses a fault, or a spec.system part,
naming a workload the SystemUnderTest does not list (or a setting it does not offer) before the
test starts.

- killPod deletes one running pod of the workload at once (grace 0), and its controller starts
  another: unlike Elves' own images, another system's may have no shell to `kill -9` through
  exec (elves.k8s.faults), so its replacement is a new pod, not a restart in place.
- scale sets the workload's replicas through its scale subresource; the replicas of every
  workload listed by name are in the test's snapshot and put back at the end.
- restart is a rollout restart (the pod template's restartedAt annotation, as kubectl does).
- spec.system sets replicas, env variables and memory/CPU limits (of the container its
  settings.container names, else the one named as the workload, else its only one), as for
  Elves' own Deployments (elves.k8s.workloads); the env and resources of every workload with
  settings are in the snapshot and put back at the end, with the replicas.

Readiness (KubernetesPlatform.system_ready) reads every workload the SystemUnderTest lists, by
name or by label selector: each must run its desired replicas, all updated and ready. Those a
selector chooses are found by listing, and join the snapshot (their replicas put back at the end)
and the results, though no fault may name them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable

from elves.engine.models.faults import FaultAction, KillPodFault, RestartFault, ScaleFault
from elves.engine.models.settable import NO_SETTINGS
from elves.engine.models.status import ContainerResources, EnvVar, WorkloadSnapshot
from elves.engine.models.system import WorkloadChange
from elves.engine.models.target import SystemUnderTestSpec, WorkloadSettings
from elves.engine.planning.platform import FaultApplied
from elves.k8s import workloads
from elves.k8s.kube import Kube


class TargetWorkloadError(RuntimeError):
    """A target's workload is missing or not shaped as a fault needs; the message says which."""


@dataclass(frozen=True)
class TargetWorkloads:
    """The workloads a SystemUnderTest lists by name (name -> kind) and by label selector ((kind,
    selector) pairs, as label selector strings), in its namespace."""

    namespace: str
    kinds: dict[str, str]
    selectors: tuple[tuple[str, str], ...] = ()
    # What a LoadTest may set besides replicas, of those that offer anything (settings).
    settings: dict[str, WorkloadSettings] = field(default_factory=dict)

    @classmethod
    def of(cls, namespace: str, spec: SystemUnderTestSpec) -> TargetWorkloads:
        return cls(namespace, {w.name: w.kind for w in spec.workloads if w.name is not None},
                   tuple((w.kind, ",".join(f"{key}={value}" for key, value in sorted(w.selector.match_labels.items())))
                         for w in spec.workloads if w.selector is not None),
                   {w.name: w.settings for w in spec.workloads if w.name is not None and w.settings is not None})


def _read(kube: Kube, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
    return (kube.deployment if kind == "Deployment" else kube.statefulset)(namespace, name)


def _not_found(kind: str, name: str, namespace: str) -> str:
    return f"{kind} {name} not found in namespace {namespace}"


def _list(kube: Kube, kind: str) -> Callable[[str, str], list[dict[str, Any]]]:
    return kube.list_deployments if kind == "Deployment" else kube.list_statefulsets


def workload_not_ready(kind: str, body: dict[str, Any]) -> str | None:
    """Why one Deployment or StatefulSet is not ready, its kind first (None when it is ready)."""
    why = (workloads.deployment_not_ready if kind == "Deployment" else workloads.statefulset_not_ready)(body)
    return why and f"{kind} {why}"


def found(kube: Kube, target: TargetWorkloads) -> tuple[dict[str, tuple[str, dict[str, Any]]], list[str]]:
    """Every workload the target lists that exists, by name -> (kind, body): those listed by name
    and those a selector chooses (a name listed both ways is the named one); and what is missing,
    in words: a named workload not found, a selector that chooses none."""
    present: dict[str, tuple[str, dict[str, Any]]] = {}
    missing = []
    for name, kind in sorted(target.kinds.items()):
        body = _read(kube, kind, target.namespace, name)
        if body is None:
            missing.append(_not_found(kind, name, target.namespace))
        else:
            present[name] = (kind, body)
    for kind, selector in target.selectors:
        chosen = _list(kube, kind)(target.namespace, selector)
        if not chosen:
            missing.append(f"no {kind} in namespace {target.namespace} has the labels {selector}")
        for body in chosen:
            present.setdefault(body["metadata"]["name"], (kind, body))
    return present, missing


def not_ready(kube: Kube, target: TargetWorkloads) -> list[str]:
    """Why the target's workloads are not all ready (empty when they are): one missing, or one that
    does not run its desired replicas, all updated and ready."""
    present, missing = found(kube, target)
    return missing + [why for name, (kind, body) in sorted(present.items()) if (why := workload_not_ready(kind, body))]


class TargetFaults:
    """Reads and changes the target's listed workloads (and their pods) through the API."""

    def __init__(self, kube: Kube, target: TargetWorkloads, clock: Callable[[], float]):
        self.kube, self.target, self.clock = kube, target, clock

    def _workload(self, name: str) -> tuple[str, dict[str, Any]]:
        kind = self.target.kinds.get(name)
        if kind is None:  # elves.k8s.target refuses such a fault first; a target edited since is refused too
            raise TargetWorkloadError(f"{name} is not a workload the SystemUnderTest lists by name")
        body = _read(self.kube, kind, self.target.namespace, name)
        if body is None:
            raise TargetWorkloadError(_not_found(kind, name, self.target.namespace))
        return kind, body

    def snapshot(self) -> dict[str, WorkloadSnapshot]:
        """The replicas of every listed workload that exists, by name or chosen by a selector (a
        missing one fails only the fault or setting that names it), and the env and resources of
        those with settings."""
        present, _ = found(self.kube, self.target)
        snapshots = {}
        for name, (kind, body) in sorted(present.items()):
            snapshot = WorkloadSnapshot(kind=kind, replicas=body["spec"].get("replicas", 1))
            if (settings := self.target.settings.get(name)) is not None:
                _, container = workloads.container_index(body, _container_of(kind, body, settings))
                snapshot.container = container["name"]
                snapshot.resources = ContainerResources.model_validate(container.get("resources") or {})
                snapshot.env = [EnvVar.model_validate(e) for e in container.get("env") or []]
            snapshots[name] = snapshot
        return snapshots

    def change(self, change: WorkloadChange) -> None:
        """spec.system's env and limits of one workload (its replicas: scale, after every change)."""
        if not (change.env or change.memory or change.cpu):
            return
        kind, body = self._workload(change.workload)
        settings = self.target.settings.get(change.workload) or NO_SETTINGS
        ops = workloads.change_ops(body, change.env, change.memory, change.cpu, _container_of(kind, body, settings))
        if ops:
            _patch(self.kube, kind)(self.target.namespace, change.workload, ops)

    def scale(self, name: str, replicas: int) -> None:
        kind, _ = self._workload(name)
        scale(self.kube, self.target.namespace, kind, name, replicas)

    def apply(self, action: FaultAction, now: float) -> FaultApplied:
        name = getattr(action, "workload", None) or ""
        kind, body = self._workload(name)
        where = f"{kind} {name} in namespace {self.target.namespace}"
        if isinstance(action, ScaleFault):
            before = body["spec"].get("replicas", 1)
            scale(self.kube, self.target.namespace, kind, name, action.replicas)
            return FaultApplied(f"scaled {where} from {before} to {action.replicas} replicas")
        if isinstance(action, KillPodFault):
            pod = workloads.pick_pod(self.kube.pods(self.target.namespace, _selector(body, where)), random.choice)
            if pod is None:
                raise TargetWorkloadError(f"no running pod of {where} to kill")
            self.kube.delete_pod(self.target.namespace, pod["metadata"]["name"], grace_seconds=0)
            return FaultApplied(f"deleted pod {pod['metadata']['name']} of {where} at once; its controller starts"
                                " another")
        if isinstance(action, RestartFault):
            _patch(self.kube, kind)(self.target.namespace, name, workloads.restart_patch(self.clock()))
            return FaultApplied(f"rollout restart of {where}")
        raise TargetWorkloadError(f"fault action {action.kind!r} cannot act on another system's workload")


def _container_of(kind: str, body: dict[str, Any], settings: WorkloadSettings) -> str:
    """The container a workload's settings apply to: settings.container, else the one named as the
    workload, else its only one."""
    containers = [c.get("name") for c in body["spec"]["template"]["spec"].get("containers") or []]
    name = body["metadata"]["name"]
    if settings.container is not None and settings.container in containers:
        return settings.container
    if settings.container is None and name in containers:
        return name
    if settings.container is None and len(containers) == 1:
        return containers[0]
    wanted = f"no container named {settings.container}" if settings.container else (
        f"several containers and none named {name}")
    raise TargetWorkloadError(f"{kind} {name} has {wanted} (containers:"
                              f" {', '.join(containers)}): its SystemUnderTest's settings.container names the one"
                              " a LoadTest sets")


def _patch(kube: Kube, kind: str) -> Callable[..., None]:
    return kube.patch_deployment if kind == "Deployment" else kube.patch_statefulset


def scale(kube: Kube, namespace: str, kind: str, name: str, replicas: int) -> None:
    (kube.scale_deployment if kind == "Deployment" else kube.scale_statefulset)(namespace, name, replicas)


def restore(kube: Kube, namespace: str, wanted: dict[str, WorkloadSnapshot]) -> None:
    """Put the snapshotted env, resources and replicas back (from the snapshot alone: a LoadTest
    deleted mid-run is restored without reading its target again); a workload gone since is left
    gone."""
    for name, snapshot in sorted(wanted.items()):
        read = kube.deployment if snapshot.kind == "Deployment" else kube.statefulset
        body = read(namespace, name)
        if body is None:
            continue
        if snapshot.container is not None and (ops := workloads.restore_ops(body, snapshot, snapshot.container)):
            _patch(kube, snapshot.kind)(namespace, name, ops)
        if body["spec"].get("replicas", 1) != snapshot.replicas:
            scale(kube, namespace, snapshot.kind, name, snapshot.replicas)


def _selector(body: dict[str, Any], where: str) -> str:
    """The workload's pod selector as a label selector string (matchLabels only)."""
    selector = (body.get("spec") or {}).get("selector") or {}
    if selector.get("matchExpressions") or not selector.get("matchLabels"):
        raise TargetWorkloadError(f"{where} selects its pods by matchExpressions; killPod needs a selector of"
                                  " matchLabels only")
    return ",".join(f"{key}={value}" for key, value in sorted(selector["matchLabels"].items()))
