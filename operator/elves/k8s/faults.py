"""What a LoadTest may ask of a cluster, and how each fault maps onto the Kubernetes API.

Checked before a test takes the system, so a spec that can never work on a cluster ends
in Error at once with the field named, instead of halfway through the load.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from elves.engine.models import LoadTestSpec
from elves.engine.units import parse_duration


def cluster_problems(spec: LoadTestSpec) -> list[str]:
    """The parts of a valid spec that only the local mode can do, each with its field."""
    problems = []
    script = spec.load.script
    if script is not None and script.path is not None:
        problems.append("spec.load.script.path: a file path works in local mode only; on a cluster put the "
                        "script in a ConfigMap and name it in spec.load.script.configMap")
    for index, fault in enumerate(spec.faults):
        if fault.pause is not None:
            problems.append(f"spec.faults[{index}].pause: freezing processes works in local mode only "
                            "(no Kubernetes API stops a container); use killPod or restart")
        if fault.restart_infra is not None and parse_duration(fault.restart_infra.down_for) > 0:
            problems.append(f"spec.faults[{index}].restartInfra.downFor: on a cluster the StatefulSet starts the "
                            "deleted pod again at once; use 0s (or leave it out)")
    return problems


@dataclass(frozen=True)
class FaultCall:
    """One fault as the API call that does it."""

    action: str  # scale | killPod | restart | restartInfra | resources
    deployment: str = ""  # the Deployment it acts on (scale, killPod, restart, resources)
    pod: str = ""  # a named pod to delete (restartInfra: the StatefulSet's pod)
    replicas: int | None = None
    memory: str | None = None
    cpu: str | None = None


def fault_call(fault: dict[str, Any]) -> FaultCall:
    """spec.faults[i] (as Platform.apply_fault gets it) -> the call; ValueError when it is not one."""
    actions = {k: v for k, v in fault.items() if k != "at"}
    if len(actions) != 1:
        raise ValueError(f"a fault has exactly one action, got {sorted(actions)}")
    (action, params), = actions.items()
    if action == "scale":
        return FaultCall(action, deployment=params["deployment"], replicas=int(params["replicas"]))
    if action in ("killPod", "restart"):
        return FaultCall(action, deployment=params["deployment"])
    if action == "restartInfra":
        return FaultCall(action, pod=f"{params['component']}-0")  # the chart's single-replica StatefulSets
    if action == "resources":
        return FaultCall(action, deployment=params["deployment"], memory=params.get("memory"), cpu=params.get("cpu"))
    raise ValueError(f"fault action {action!r} is not possible on a cluster")


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
