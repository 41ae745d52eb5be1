"""What a LoadTest may ask of a cluster, and how killPod kills a container there.

Checked before a test takes the system, so a spec that can never work on a cluster ends
in Error at once with the field named, instead of halfway through the load.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from elves.engine.models.autoscaling import others_autoscaled
from elves.engine.models.modelbase import cluster_breaches
from elves.engine.models.spec import LoadTestSpec
from elves.engine.planning.plan import expand_sweep


@dataclass(frozen=True)
class Caps:
    """What a LoadTest may give a service on this cluster (the chart's operator.limits)."""

    max_replicas: int
    max_memory_bytes: int


def cluster_problems(spec: LoadTestSpec, caps: Caps | None = None) -> list[str]:
    """The parts of a valid spec that only the local mode can do, or that ask for more than
    the caps allow, each with its field."""
    problems = _over_caps(spec, caps) if caps is not None else []
    problems += cluster_breaches(spec, "spec")  # what the CRD refuses, should it predate the rule
    script = spec.load.script
    if script is not None and script.path is not None:
        problems.append("spec.load.script.path: a file path works in local mode only; on a cluster put the "
                        "script in a ConfigMap and name it in spec.load.script.configMap")
    for index, fault in enumerate(spec.faults):
        if fault.pause is not None:
            problems.append(f"spec.faults[{index}].pause: freezing processes works in local mode only "
                            "(no Kubernetes API stops a container); use killPod or restart")
        if fault.restart_infra is not None and fault.restart_infra.down_for.seconds > 0:
            problems.append(f"spec.faults[{index}].restartInfra.downFor: on a cluster the kubelet starts the "
                            "stopped container again at once; use 0s (or leave it out)")
    return problems


def _over_caps(spec: LoadTestSpec, caps: Caps) -> list[str]:
    problems = []
    replicas_cap = f"more than the {caps.max_replicas} replicas this cluster allows (operator.limits.maxReplicas)"
    memory_cap = f"more than the {caps.max_memory_bytes} bytes this cluster allows (operator.limits.maxMemory)"
    # Every sweep point: a sweep may raise what spec.system sets.
    for point in expand_sweep(spec):
        where = f" (sweep point {point.index}: {point.values})" if point.values else ""
        for change in point.system.changes():
            if change.replicas is not None and change.replicas > caps.max_replicas:
                problems.append(f"spec.system.replicas.{change.workload}: {change.replicas} is {replicas_cap}{where}")
            if change.memory is not None and change.memory.bytes > caps.max_memory_bytes:
                problems.append(f"spec.system.resources.{change.workload}.memory: {change.memory} is "
                                f"{memory_cap}{where}")
        for deployment in point.system.autoscaled():
            settings = getattr(point.system.autoscaling, deployment)
            if settings.max_replicas > caps.max_replicas:
                problems.append(f"spec.system.autoscaling.{deployment}.maxReplicas: {settings.max_replicas} is "
                                f"{replicas_cap}{where}")
        for workload in others_autoscaled(point.system.autoscaling):  # another system's: its values as written
            most = point.system.autoscaling.__pydantic_extra__[workload].get("maxReplicas")
            if isinstance(most, int) and most > caps.max_replicas:
                problems.append(f"spec.system.autoscaling.{workload}.maxReplicas: {most} is {replicas_cap}{where}")
    for index, fault in enumerate(spec.faults):
        if fault.scale is not None and fault.scale.replicas > caps.max_replicas:
            problems.append(f"spec.faults[{index}].scale.replicas: {fault.scale.replicas} is {replicas_cap}")
        if fault.resources is not None and fault.resources.memory is not None \
                and fault.resources.memory.bytes > caps.max_memory_bytes:
            problems.append(f"spec.faults[{index}].resources.memory: {fault.resources.memory} is {memory_cap}")
    return list(dict.fromkeys(problems))


# killPod on a cluster: SIGKILL the container's main process through pods/exec, so the
# kubelet restarts the container in the same pod and its restart count rises (as the local
# mode's supervisor restarts a killed replica in place). Deleting the pod instead would
# start a new pod whose restart counter begins at 0. The chart runs the service pods with
# shareProcessNamespace, so PID 1 is the pod's pause process and the JVM is not: `kill -9
# -1` (every process this uid may signal, except PID 1 and the shell itself) reaches it.
# Without a shared PID namespace the JVM is PID 1, which ignores SIGKILL sent from inside
# its own namespace; the container then does not die and the operator deletes the pod.
KILL_COMMAND = ["sh", "-c", "kill -9 -1"]
KILL_SECONDS = 30.0  # how long the kubelet may take to report the container dead

# restartInfra on a cluster: a clean stop of the broker's or the database's main process
# through pods/exec; the container exits and the kubelet starts it again in the same pod, with
# the same data. Deleting the pod instead would lose everything when the chart keeps the data
# on an emptyDir (persistence.enabled=false: the data lives as long as the pod), and it is not
# what the local mode does (the same process stopped and started on the same data directory).
# RabbitMQ's rabbitmq-server script (PID 1) stops the node cleanly on SIGTERM, as on a pod's
# deletion; PostgreSQL gets the chart's preStop (a fast shutdown: a plain SIGTERM would wait
# for every client to leave), without waiting for it (the exec ends with the container).
INFRA_STOP_COMMANDS = {
    "rabbitmq": ["sh", "-c", "kill -TERM 1"],
    "postgres": ["sh", "-c", 'exec pg_ctl stop -D "$PGDATA" -m fast --no-wait'],
}
INFRA_STOP_SECONDS = 90.0  # a clean stop flushes queues or checkpoints; the chart's grace is 60-70 s


def container_run(pod: dict[str, Any], container: str) -> tuple[str, int] | None:
    """(containerID, restartCount) of the running container, or None when it does not run."""
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        if status.get("name") == container:
            if not (status.get("state") or {}).get("running"):
                return None
            return status.get("containerID") or "", int(status.get("restartCount") or 0)
    return None


def container_died(before: tuple[str, int], pod: dict[str, Any] | None, container: str) -> bool:
    """Whether the container that ran as `before` has ended (or been replaced) in `pod`."""
    if pod is None:
        return True  # the pod itself went; the kill certainly took
    now = container_run(pod, container)
    return now is None or now != before
