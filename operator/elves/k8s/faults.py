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
