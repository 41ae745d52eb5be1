"""spec.system: the replicas, resources, service settings and autoscaling a test asks of each deployment."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field, create_model

from elves.constants import DEPLOYMENTS, TUNABLES
from elves.engine.models.autoscaling import REPLICAS_RULES, Autoscaling, autoscaled
from elves.engine.models.fields import EnvName, EnvValue
from elves.engine.models.modelbase import Rule, SpecModel
from elves.engine.models.units import Cpu, Memory


def _per_deployment(name: str, annotation: Any, description: str = "") -> Any:
    """A model with one optional field per deployment of elves.constants.DEPLOYMENTS."""
    fields: dict[str, Any] = {
        d: (annotation | None, Field(None, description=description.format(d) or None)) for d in DEPLOYMENTS}
    return create_model(name, __base__=SpecModel, __module__=__name__, **fields)


class ResourceLimits(SpecModel):
    memory: Memory | None = Field(None, description="Memory limit (locally: the JVM heap cap), e.g. 2Gi.")
    cpu: Cpu | None = Field(None, description="CPU limit, e.g. 500m.")


# Bounded, so kube-apiserver can bound the cost of the tunables rule (CEL) over it.
EnvVars = Annotated[dict[EnvName, EnvValue], Field(max_length=50)]
Replicas = _per_deployment("Replicas", Annotated[int, Field(ge=0, le=100)], "Replicas of the {}.")
Resources = _per_deployment("Resources", ResourceLimits)
Env = _per_deployment("Env", EnvVars, "Service settings of the {} for this test (only its declared tunables).")


def _tunables_rule(deployment: str) -> Rule:
    """spec.system.env.<deployment> sets only that service's declared tunables (constants.TUNABLES)."""
    allowed = TUNABLES[deployment]
    names = ", ".join(f"'{name}'" for name in allowed)

    def unknown(env: Any) -> list[str]:
        return sorted(set(getattr(env, deployment) or {}) - set(allowed))

    return Rule(f"!has(self.{deployment}) || self.{deployment}.all(k, k in [{names}])",
                f"env.{deployment}: only the {deployment}'s tunables may be set: {', '.join(allowed)}",
                lambda env: bool(unknown(env)),
                lambda env: f"env.{deployment}.{unknown(env)[0]}: not a tunable of the {deployment} "
                            f"(a LoadTest may set only: {', '.join(allowed)})")


Env.rules = tuple(_tunables_rule(name) for name in DEPLOYMENTS)


@dataclass(frozen=True)
class DeploymentChange:
    """What spec.system asks of one deployment; None leaves that part as it is."""

    deployment: str
    replicas: int | None = None
    env: EnvVars | None = None
    memory: Memory | None = None
    cpu: Cpu | None = None


class System(SpecModel):
    """The system under test as this test wants it; unset parts stay as they are."""

    rules = REPLICAS_RULES

    replicas: Replicas = Field(default_factory=Replicas)
    resources: Resources = Field(default_factory=Resources)
    env: Env = Field(default_factory=Env)
    autoscaling: Autoscaling = Field(default_factory=Autoscaling, description=(
        "Hand a deployment's replicas to an autoscaler for the run (cluster only): KEDA on the work queue's length "
        "for the ingestor, the HPA on CPU for the gateway and the registry."))

    def autoscaled(self) -> list[str]:
        """The deployments an autoscaler owns in this system."""
        return autoscaled(self.autoscaling)

    def autoscaling_settings(self) -> dict[str, Any]:
        """The autoscaling this system sets, by deployment (mode fixed too: it takes the chart's away)."""
        return {d: getattr(self.autoscaling, d) for d in DEPLOYMENTS if getattr(self.autoscaling, d) is not None}

    def changes(self) -> list[DeploymentChange]:
        """One change per deployment this system sets anything of, in DEPLOYMENTS order."""
        changes = []
        for name in DEPLOYMENTS:
            limits = getattr(self.resources, name) or ResourceLimits()
            change = DeploymentChange(name, getattr(self.replicas, name), getattr(self.env, name),
                                      limits.memory, limits.cpu)
            if change != DeploymentChange(name):
                changes.append(change)
        return changes

    def as_written(self) -> dict[str, Any]:
        """The YAML form, without unset parts: {"replicas": {"ingestor": 2}}."""
        return {k: v for k, v in self.model_dump(by_alias=True, exclude_none=True).items() if v}


def set_path(system: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of `system` (a spec.system dict) with the sweep path `system.a.b.c` set to `value`.

    Env values and resource quantities are strings in the spec, so numbers written in a
    sweep list (`[2, 5, 9]`) are turned into strings there."""
    parts = path.split(".")[1:]
    result = copy.deepcopy(system)
    node = result
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    if parts[0] in ("env", "resources") and isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    node[parts[-1]] = value
    return result
