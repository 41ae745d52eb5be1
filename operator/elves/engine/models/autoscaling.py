"""spec.system.autoscaling: who owns a deployment's replica count during a run (cluster only).

A deployment that consumes a work queue (elves.constants.SCALED_ON_QUEUE: the ingestor) is
scaled by KEDA on that queue's length, the others by the HPA on CPU: the same settings as the
chart's services.<name>.autoscaling values. `mode: fixed` keeps the replicas fixed, so a sweep
over `system.autoscaling.<deployment>.mode` compares fixed replicas with the autoscaler under
the same load.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import ConfigDict, Field, create_model, model_validator

from elves.constants import DEPLOYMENTS, SCALED_ON_QUEUE
from elves.engine.models.fields import DNS_SUBDOMAIN_PATTERN
from elves.engine.models.modelbase import Rule, SpecModel
from elves.engine.models.units import Duration

FIXED = "fixed"


def bounds_rule() -> Rule:
    return Rule("!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas",
                "minReplicas must not be above maxReplicas",
                lambda a: a.min_replicas > a.max_replicas,
                lambda a: f"minReplicas {a.min_replicas} is above maxReplicas {a.max_replicas}")


class QueueAutoscaling(SpecModel):
    """KEDA on the length of the deployment's work queue (a ScaledObject)."""

    rules = (bounds_rule(),)

    mode: Literal["keda", "fixed"] = Field("keda", description="keda, or fixed: the replicas stay as they are.")
    min_replicas: int = Field(1, ge=0, le=100, description="Fewest replicas (0: none while the queue is empty).")
    max_replicas: int = Field(5, ge=1, le=100, description="Most replicas.")
    messages_per_replica: int = Field(20, ge=1, le=1_000_000,
                                      description="Messages ready in the queue per replica that KEDA aims at.")
    polling_interval: Duration = Field(Duration.parse("15s"), description="How often KEDA reads the queue's length.")
    cooldown: Duration = Field(Duration.parse("2m"), description="How long a shorter queue must last before KEDA "
                                                                 "removes replicas.")


class CpuAutoscaling(SpecModel):
    """The HorizontalPodAutoscaler on CPU utilisation (autoscaling/v2)."""

    rules = (bounds_rule(),)

    mode: Literal["hpa", "fixed"] = Field("hpa", description="hpa, or fixed: the replicas stay as they are.")
    min_replicas: int = Field(1, ge=1, le=100, description="Fewest replicas.")
    max_replicas: int = Field(4, ge=1, le=100, description="Most replicas.")
    cpu_utilization: int = Field(70, ge=1, le=1000,
                                 description="Mean CPU use the HPA keeps the pods at, percent of their CPU request.")


def settings_type(deployment: str) -> type[SpecModel]:
    return QueueAutoscaling if deployment in SCALED_ON_QUEUE else CpuAutoscaling


MAX_OTHER_WORKLOADS = 50


class _AutoscalingBase(SpecModel):
    """Elves' deployments as typed fields; any other key is a workload of another system, whose
    settings depend on the trigger its SystemUnderTest describes, so they are read against it
    (elves.engine.models.workload_autoscaler) once the target is known. The CRD keeps them as
    written (x-kubernetes-preserve-unknown-fields beside the typed fields)."""

    model_config = ConfigDict(**{**SpecModel.model_config, "extra": "allow"})
    __pydantic_extra__: dict[str, dict[str, Any]] = Field(init=False)  # type: ignore[assignment]

    @model_validator(mode="after")
    def _other_workloads(self) -> Any:
        names = list(self.__pydantic_extra__ or {})
        if len(names) > MAX_OTHER_WORKLOADS:
            raise ValueError(f"at most {MAX_OTHER_WORKLOADS} workloads")
        bad = [n for n in names if not re.match(DNS_SUBDOMAIN_PATTERN, n) or len(n) > 253]
        if bad:
            raise ValueError(f"{bad[0]!r} is not a workload's name (lowercase letters, digits, - and .)")
        return self


_fields: dict[str, Any] = {d: (settings_type(d) | None, Field(None, description=f"Autoscaling of the {d}."))
                           for d in DEPLOYMENTS}
Autoscaling = create_model("Autoscaling", __base__=_AutoscalingBase, __module__=__name__, **_fields)


def autoscaled(autoscaling: Any) -> list[str]:
    """Elves' deployments an autoscaler owns in this spec.system.autoscaling, in DEPLOYMENTS order."""
    return [d for d in DEPLOYMENTS if (getattr(autoscaling, d) is not None and getattr(autoscaling, d).mode != FIXED)]


def others_autoscaled(autoscaling: Any) -> list[str]:
    """Other systems' workloads this spec.system.autoscaling hands to an autoscaler, by name."""
    return sorted(name for name, values in (autoscaling.__pydantic_extra__ or {}).items()
                  if (values or {}).get("mode") != FIXED)


def _cel_autoscaled(deployment: str) -> str:
    """CEL: spec.system.autoscaling.<deployment> is on (a mode absent is the autoscaler's)."""
    field = f"self.system.autoscaling.{deployment}"
    return (f"(has(self.system) && has(self.system.autoscaling) && has({field})"
            f" && (!has({field}.mode) || {field}.mode != '{FIXED}'))")


def _cel_swept(deployment: str) -> str:
    return f"(has(self.sweep) && self.sweep.exists(k, k.startsWith('system.autoscaling.{deployment}.')))"


def _autoscaled_anywhere(spec: Any) -> set[str]:
    """Deployments autoscaled by spec.system or by any sweep of their autoscaling."""
    swept = {key.split(".")[2] for key in (spec.sweep or {}) if key.startswith("system.autoscaling.")}
    return set(autoscaled(spec.system.autoscaling)) | swept


def _scale_faults_on(spec: Any, deployment: str) -> list[int]:
    return [i for i, fault in enumerate(spec.faults) if fault.scale is not None and fault.scale.deployment == deployment
            and deployment in _autoscaled_anywhere(spec)]


def _scale_fault_rule(deployment: str) -> Rule:
    """No scale fault on a deployment whose replicas an autoscaler owns: it would undo the fault."""
    return Rule(
        f"!has(self.faults) || !({_cel_autoscaled(deployment)} || {_cel_swept(deployment)})"
        f" || self.faults.all(f, !has(f.scale) || !has(f.scale.deployment) || f.scale.deployment != '{deployment}')",
        f"faults: a scale fault on the {deployment}, which system.autoscaling.{deployment} autoscales: "
        f"its autoscaler owns the replicas and would undo it (use killPod or restart, or mode: {FIXED})",
        lambda spec: bool(_scale_faults_on(spec, deployment)),
        lambda spec: f"faults[{_scale_faults_on(spec, deployment)[0]}].scale: the {deployment} is autoscaled "
                     f"(system.autoscaling.{deployment}), so its autoscaler owns the replicas and would undo the "
                     f"fault; use killPod or restart, or mode: {FIXED}")


SCALE_FAULT_RULES = tuple(_scale_fault_rule(d) for d in DEPLOYMENTS)


def _fixed_and_autoscaled(system: Any, deployment: str) -> bool:
    return system.replicas.get(deployment) is not None and deployment in autoscaled(system.autoscaling)


def _replicas_rule(deployment: str) -> Rule:
    """spec.system.replicas of an autoscaled deployment would be overruled at once: refused."""
    field = f"self.autoscaling.{deployment}"
    return Rule(
        f"!has(self.replicas) || !has(self.replicas.{deployment}) || !has(self.autoscaling) || !has({field})"
        f" || (has({field}.mode) && {field}.mode == '{FIXED}')",
        f"replicas.{deployment}: the {deployment} is autoscaled (autoscaling.{deployment}); "
        f"set its minReplicas and maxReplicas instead",
        lambda system: _fixed_and_autoscaled(system, deployment))


REPLICAS_RULES = tuple(_replicas_rule(d) for d in DEPLOYMENTS)
