"""kube-state-metrics series for the local replicas, so one set of queries serves both modes.

Names and meanings follow kube-state-metrics; every pod series also carries `deployment`
and `container` (= the deployment name, as in the chart), see docs/architecture.md.
"""

from __future__ import annotations

from collections.abc import Iterable

from elves.constants import SYSTEM_NAMESPACE
from elves.local.replicas import DeploymentSpec, Replica

_HELP = {
    "kube_deployment_spec_replicas": ("gauge", "Number of desired pods for a deployment."),
    "kube_deployment_status_replicas": ("gauge", "The number of replicas per deployment."),
    "kube_deployment_status_replicas_ready": ("gauge", "The number of ready replicas per deployment."),
    "kube_deployment_status_replicas_available": ("gauge", "The number of available replicas per deployment."),
    "kube_deployment_status_replicas_updated": ("gauge", "The number of updated replicas per deployment."),
    "kube_pod_info": ("gauge", "Information about pod."),
    "kube_pod_container_status_ready": ("gauge", "Describes whether the containers readiness check succeeded."),
    "kube_pod_container_status_running": ("gauge", "Describes whether the container is currently in running state."),
    "kube_pod_container_status_restarts_total": ("counter", "The number of container restarts per container."),
    "kube_pod_container_status_last_terminated_reason": ("gauge", "Describes the last reason the container was in terminated state."),
    "kube_pod_container_status_last_terminated_exitcode": ("gauge", "Describes the exit code for the last container in terminated state."),
    "kube_pod_container_resource_limits": ("gauge", "The number of requested limit resource by a container."),
}


def _labels(**labels: str) -> str:
    def escape(value: str) -> str:
        return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')

    return "{" + ",".join(f'{key}="{escape(str(value))}"' for key, value in labels.items()) + "}"


def render(specs: Iterable[DeploymentSpec], replicas: Iterable[Replica]) -> str:
    """The Prometheus text exposition of every series, grouped by metric name."""
    samples: dict[str, list[str]] = {name: [] for name in _HELP}

    def add(name: str, value: float | int, **labels: str) -> None:
        samples[name].append(f"{name}{_labels(**labels)} {value}")

    replicas = list(replicas)
    for spec in specs:
        own = [r for r in replicas if r.deployment == spec.name]
        live = [r for r in own if r.phase != "terminating"]
        ns = {"namespace": SYSTEM_NAMESPACE, "deployment": spec.name}
        add("kube_deployment_spec_replicas", spec.replicas, **ns)
        add("kube_deployment_status_replicas", len(live), **ns)
        ready = sum(1 for r in live if r.ready)
        add("kube_deployment_status_replicas_ready", ready, **ns)
        add("kube_deployment_status_replicas_available", ready, **ns)
        add("kube_deployment_status_replicas_updated",
            sum(1 for r in live if r.generation == spec.generation), **ns)
        for replica in own:
            pod = {**ns, "pod": replica.pod}
            container = {**pod, "container": spec.name}
            add("kube_pod_info", 1, **pod, node="local", host_ip="127.0.0.1", pod_ip="127.0.0.1",
                created_by_kind="ReplicaSet", created_by_name=spec.name)
            add("kube_pod_container_status_ready", int(replica.ready), **container)
            add("kube_pod_container_status_running", int(replica.phase == "running"), **container)
            add("kube_pod_container_status_restarts_total", replica.restarts, **container)
            if replica.last_reason is not None:
                add("kube_pod_container_status_last_terminated_reason", 1,
                    **container, reason=replica.last_reason)
                add("kube_pod_container_status_last_terminated_exitcode",
                    replica.last_exit_code, **container)
            if spec.memory_bytes is not None:
                add("kube_pod_container_resource_limits", spec.memory_bytes,
                    **container, resource="memory", unit="byte")

    lines: list[str] = []
    for name, (kind, help_text) in _HELP.items():
        if samples[name]:
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", *samples[name]]
    return "\n".join(lines) + "\n"
