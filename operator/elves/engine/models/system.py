"""spec.system: the replicas, resources, service settings and autoscaling a test asks of each deployment."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field

from elves.constants import DEPLOYMENTS
from elves.engine.models.autoscaling import REPLICAS_RULES, Autoscaling, autoscaled
from elves.engine.models.fields import DNS_SUBDOMAIN_PATTERN, EnvName, EnvValue
from elves.engine.models.modelbase import SpecModel
from elves.engine.models.units import Cpu, Memory


class ResourceLimits(SpecModel):
    memory: Memory | None = Field(None, description="Memory limit (locally: the JVM heap cap), e.g. 2Gi.")
    cpu: Cpu | None = Field(None, description="CPU limit, e.g. 500m.")


# Keyed by workload: one of Elves' deployments, or a workload the SystemUnderTest of spec.target
# lists by name (what each may set is checked against it: elves.engine.planning.target_scope).
WorkloadName = Annotated[str, Field(pattern=DNS_SUBDOMAIN_PATTERN, max_length=253)]
# Bounded, so kube-apiserver can bound the cost of the rules (CEL) over them.
EnvVars = Annotated[dict[EnvName, EnvValue], Field(max_length=50)]
Replicas = Annotated[dict[WorkloadName, Annotated[int, Field(ge=0, le=100)]], Field(max_length=50)]
Resources = Annotated[dict[WorkloadName, ResourceLimits], Field(max_length=50)]
Env = Annotated[dict[WorkloadName, EnvVars], Field(max_length=50)]


@dataclass(frozen=True)
class WorkloadChange:
    """What spec.system asks of one workload; None leaves that part as it is."""

    workload: str
    replicas: int | None = None
    env: EnvVars | None = None
    memory: Memory | None = None
    cpu: Cpu | None = None


class System(SpecModel):
    """The system under test as this test wants it; unset parts stay as they are."""

    rules = REPLICAS_RULES

    replicas: Replicas = Field(default_factory=dict, description="Replicas per workload, e.g. {ingestor: 3}.")
    resources: Resources = Field(default_factory=dict, description="Memory and CPU limits per workload.")
    env: Env = Field(default_factory=dict, description="Settings per workload for this test (only those its"
                                                       " SystemUnderTest allows: an Elves service's tunables).")
    autoscaling: Autoscaling = Field(default_factory=Autoscaling, description=(
        "Hand a workload's replicas to an autoscaler for the run (cluster only): of Elves' own, KEDA on the work "
        "queue's length for the ingestor, the HPA on CPU for the gateway and the registry; of another system, the "
        "autoscaler its SystemUnderTest describes for the workload (checked against it by the operator)."))

    def autoscaled(self) -> list[str]:
        """The deployments an autoscaler owns in this system."""
        return autoscaled(self.autoscaling)

    def autoscaling_settings(self) -> dict[str, Any]:
        """The autoscaling this system sets, by deployment (mode fixed too: it takes the chart's away)."""
        return {d: getattr(self.autoscaling, d) for d in DEPLOYMENTS if getattr(self.autoscaling, d) is not None}

    def workloads(self) -> list[str]:
        """Every workload this system sets replicas, resources or env of: Elves' deployments in
        DEPLOYMENTS order, then others by name."""
        named = set(self.replicas) | set(self.resources) | set(self.env)
        return [d for d in DEPLOYMENTS if d in named] + sorted(named - set(DEPLOYMENTS))

    def changes(self) -> list[WorkloadChange]:
        """One change per workload this system sets anything of (workloads() order)."""
        changes = []
        for name in self.workloads():
            limits = self.resources.get(name) or ResourceLimits()
            change = WorkloadChange(name, self.replicas.get(name), self.env.get(name), limits.memory, limits.cpu)
            if change != WorkloadChange(name):
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
