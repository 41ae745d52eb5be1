"""A run's autoscalers (spec.system.autoscaling) as plain dicts: the KEDA ScaledObject or the
HorizontalPodAutoscaler of one deployment, what a snapshot keeps of one and the patches that
put one back. No API calls here; elves.k8s.platform makes them.

The objects have the chart's shape (templates/_autoscaling.tpl): a run compares the autoscaler
a user would install with fixed replicas, so it must be that autoscaler, and
tests/unit/chart/test_chart_autoscaling.py renders the chart to hold the two equal. They carry the
chart's names (the Deployment's), so a run's settings replace the chart's for the run and the
snapshot puts the chart's back.

`mode: fixed` takes the autoscaler out of the way for the run, so the replicas stay as they are
(or as spec.system.replicas and scale faults set them):
- a ScaledObject is paused (`autoscaling.keda.sh/paused: "true"`: KEDA removes the HPA it made
  and leaves the replicas where they are) rather than deleted: KEDA's finalizer makes a deletion
  take a while, and a new object of the same name cannot be created until it has gone; the
  paused object keeps its uid and Helm's ownership, and the restore only puts the annotations
  back;
- an HPA has no pause, and one whose minReplicas equals maxReplicas still owns the replicas
  (it would undo spec.system.replicas and a scale fault), so it is deleted and the restore
  creates it again from the snapshot (labels, annotations and spec as they were).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from elves.constants import SCALED_ON_QUEUE
from elves.engine.models.autoscaling import FIXED, CpuAutoscaling, QueueAutoscaling
from elves.engine.models.status import AutoscalerSnapshot
from elves.k8s.names import COMPONENT_LABEL, LABEL_LOADTEST, MANAGED_BY

PAUSED = "autoscaling.keda.sh/paused"  # KEDA (2.13+): stop scaling, keep the replicas as they are
# The API calls the operator makes on autoscalers, per resource: the chart's Role grants exactly
# these (tests/unit/chart/test_chart_operator.py), create for any name (RBAC cannot narrow a
# create by name), the others for the deployments' names only.
VERBS = ("create", "get", "patch", "delete")


@dataclass(frozen=True)
class Kind:
    group: str
    version: str
    kind: str
    plural: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"


SCALED_OBJECT = Kind("keda.sh", "v1alpha1", "ScaledObject", "scaledobjects")
HPA = Kind("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers")


def kind_of(deployment: str) -> Kind:
    """KEDA for a deployment that consumes a work queue, the HPA on CPU for the others (as the chart)."""
    return SCALED_OBJECT if deployment in SCALED_ON_QUEUE else HPA


@dataclass(frozen=True)
class Keda:
    """What a ScaledObject needs from the chart (ELVES_KEDA_*): the TriggerAuthentication holding
    KEDA's read-only RabbitMQ user and the AMQP address, without credentials."""

    trigger_authentication: str = ""
    rabbitmq_host: str = ""


def scale_target(workload: str, kind: str = "Deployment") -> dict[str, str]:
    return {"apiVersion": "apps/v1", "kind": kind, "name": workload}


def keda_spec(target: dict[str, str], settings: Any, trigger: dict[str, Any]) -> dict[str, Any]:
    """A ScaledObject's spec: `settings` (a QueueAutoscaling or a ThresholdAutoscaling) bound the
    replicas and time it, `trigger` says what it scales on."""
    cooldown = int(settings.cooldown.seconds)
    return {
        "scaleTargetRef": target,
        "minReplicaCount": settings.min_replicas,
        "maxReplicaCount": settings.max_replicas,
        "pollingInterval": int(settings.polling_interval.seconds),
        # KEDA's cooldown only delays scaling to zero; the HPA it makes waits as long before
        # removing any replica, so one setting says how long a shorter queue must last.
        "cooldownPeriod": cooldown,
        "advanced": {"horizontalPodAutoscalerConfig": {"behavior": {"scaleDown": {
            "stabilizationWindowSeconds": cooldown}}}},
        "triggers": [trigger],
    }


def scaled_object_spec(deployment: str, settings: QueueAutoscaling, keda: Keda) -> dict[str, Any]:
    return keda_spec(scale_target(deployment), settings, {
        "type": "rabbitmq",
        "metadata": {"protocol": "amqp", "host": keda.rabbitmq_host, "vhostName": "/",
                     "queueName": SCALED_ON_QUEUE[deployment], "mode": "QueueLength",
                     "value": str(settings.messages_per_replica)},
        "authenticationRef": {"name": keda.trigger_authentication},
    })


def hpa_spec(deployment: str, settings: CpuAutoscaling, kind: str = "Deployment") -> dict[str, Any]:
    return {
        "scaleTargetRef": scale_target(deployment, kind),
        "minReplicas": settings.min_replicas,
        "maxReplicas": settings.max_replicas,
        "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": settings.cpu_utilization}}}],
    }


def spec_of(deployment: str, settings: QueueAutoscaling | CpuAutoscaling, keda: Keda) -> dict[str, Any]:
    if isinstance(settings, QueueAutoscaling):
        return scaled_object_spec(deployment, settings, keda)
    return hpa_spec(deployment, settings)


def run_labels(deployment: str, loadtest: str) -> dict[str, str]:
    """An autoscaler a run creates: the LoadTest that made it (the restore deletes only those)."""
    return {COMPONENT_LABEL: deployment, LABEL_LOADTEST: loadtest, **MANAGED_BY}


def body(deployment: str, namespace: str, labels: dict[str, str], spec: dict[str, Any],
         kind: Kind | None = None) -> dict[str, Any]:
    """The object named `deployment` (or, with `kind`, another system's autoscaler of that name)."""
    kind = kind or kind_of(deployment)
    return {"apiVersion": kind.api_version, "kind": kind.kind,
            "metadata": {"name": deployment, "namespace": namespace, "labels": labels}, "spec": spec}


def snapshot(obj: dict[str, Any]) -> AutoscalerSnapshot:
    meta = obj["metadata"]
    return AutoscalerSnapshot(labels=meta.get("labels") or {}, annotations=meta.get("annotations") or {},
                              spec=obj.get("spec") or {})


def _set(obj: dict[str, Any], path: str, value: Any) -> list[dict[str, Any]]:
    """JSON patch ops making `path` (under the object) hold `value` ([] when it does); an empty
    map is no map, so a restore does not leave `annotations: {}` where there were none."""
    node: Any = obj
    for part in path.strip("/").split("/"):
        node = node.get(part) if isinstance(node, dict) else None
    if (node or {}) == (value or {}):
        return []
    return [{"op": "add", "path": path, "value": value}] if value else [{"op": "remove", "path": path}]


def restore_ops(obj: dict[str, Any], wanted: AutoscalerSnapshot) -> list[dict[str, Any]]:
    """JSON patch putting labels, annotations and spec back as snapshotted ([] when nothing differs)."""
    return (_set(obj, "/metadata/labels", wanted.labels) + _set(obj, "/metadata/annotations", wanted.annotations)
            + _set(obj, "/spec", wanted.spec))


def apply_ops(obj: dict[str, Any], spec: dict[str, Any]) -> list[dict[str, Any]]:
    """JSON patch giving an existing autoscaler the run's spec, working (not paused)."""
    annotations = {k: v for k, v in (obj["metadata"].get("annotations") or {}).items() if k != PAUSED}
    return _set(obj, "/metadata/annotations", annotations) + _set(obj, "/spec", spec)


def pause_ops(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """JSON patch pausing a ScaledObject (mode: fixed)."""
    annotations = {**(obj["metadata"].get("annotations") or {}), PAUSED: "true"}
    return _set(obj, "/metadata/annotations", annotations)


def made_by(obj: dict[str, Any], loadtest: str) -> bool:
    """Whether a run of this LoadTest created the object (not the chart, not someone else)."""
    return (obj["metadata"].get("labels") or {}).get(LABEL_LOADTEST) == loadtest


def is_fixed(settings: Any) -> bool:
    return settings.mode == FIXED
