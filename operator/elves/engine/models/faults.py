"""spec.faults: what happens to the system during the load, and when."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from elves.engine.models.fields import DNS_SUBDOMAIN_PATTERN, Deployment
from elves.engine.models.modelbase import Rule, SpecModel
from elves.engine.models.units import Cpu, Duration, Memory


class FaultAction(SpecModel):
    """What a fault does; `kind` is its key in the YAML (scale, killPod, ...)."""

    kind: ClassVar[str]
    # Whether applying it again leaves the system as applying it once did (scale to N, set a
    # limit), so a try that failed midway may be made again; a kill or a restart fires once.
    repeatable: ClassVar[bool] = False

    def params(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True)

    def describe(self) -> str:
        """"scale(deployment=ingestor, replicas=0)": the action and its parameters as written."""
        return f"{self.kind}({', '.join(f'{k}={v}' for k, v in self.params().items())})"

    def label(self) -> str:
        """A few words for a plot marker: "killPod registry", "scale ingestor to 0"."""
        return f"{self.kind} {getattr(self, 'subject', '') or getattr(self, 'deployment', '')}".strip()


class WorkloadAction(FaultAction):
    """An action on one of Elves' deployments, or on a workload of the SystemUnderTest the test
    names (spec.target): which one, the operator checks against the target when it reads it."""

    rules = (Rule("has(self.deployment) != has(self.workload)",
                  "set exactly one of deployment (Elves' own) or workload (one the SystemUnderTest of spec.target"
                  " lists by name)",
                  lambda a: (a.deployment is None) == (a.workload is None)),)

    deployment: Deployment | None = Field(None, description="One of Elves' own deployments.")
    workload: str | None = Field(None, pattern=DNS_SUBDOMAIN_PATTERN, max_length=253,
                                 description="A workload the SystemUnderTest of spec.target lists by name (another"
                                             " system than Elves'; a cluster only).")

    @property
    def subject(self) -> str:
        """The deployment or the workload acted on."""
        return self.deployment or self.workload or ""


class ScaleFault(WorkloadAction):
    kind = "scale"
    repeatable = True
    replicas: int = Field(ge=0, le=100)

    def label(self) -> str:
        return f"scale {self.subject} to {self.replicas}"


class KillPodFault(WorkloadAction):
    kind = "killPod"


class RestartFault(WorkloadAction):
    kind = "restart"


class PauseFault(FaultAction):
    kind = "pause"
    deployment: Deployment
    for_: Duration = Field(alias="for", description="How long the processes stay stopped (SIGSTOP, then SIGCONT).")

    def label(self) -> str:
        return f"pause {self.deployment} {self.for_}"


class InfraFault(FaultAction):
    kind = "restartInfra"
    component: Literal["rabbitmq", "postgres"]
    down_for: Duration = Field(Duration.parse("0s"), description="How long the component stays down before it starts again.")

    def label(self) -> str:
        return f"restartInfra {self.component}"


class ResourcesFault(FaultAction):
    kind = "resources"
    repeatable = True
    rules = (Rule("has(self.memory) || has(self.cpu)", "set memory or cpu",
                  lambda r: r.memory is None and r.cpu is None),)

    deployment: Deployment
    memory: Memory | None = None
    cpu: Cpu | None = None

    def label(self) -> str:
        return f"resources {self.deployment} {self.memory or self.cpu or ''}".strip()


FAULT_ACTION_TYPES = (ScaleFault, KillPodFault, RestartFault, PauseFault, InfraFault, ResourcesFault)
FAULT_ACTIONS = tuple(t.kind for t in FAULT_ACTION_TYPES)


class Fault(SpecModel):
    rules = (Rule(
        "[" + ", ".join(f"has(self.{a})" for a in FAULT_ACTIONS) + "].filter(x, x).size() == 1",
        "set exactly one action: " + ", ".join(FAULT_ACTIONS),
        lambda fault: len(fault._actions()) != 1,
    ),)

    at: Duration = Field(description="When, counted from the start of the load.")
    scale: ScaleFault | None = Field(None, description="Set the replicas of a deployment.")
    kill_pod: KillPodFault | None = Field(None, description="SIGKILL the main process of one replica; it restarts in place (on a cluster: kill -9 through exec; a target's workload: its pod deleted at once, and its controller starts another).")
    restart: RestartFault | None = Field(None, description="Rolling restart of a deployment.")
    pause: PauseFault | None = Field(None, description="Freeze a deployment's processes for a while (local mode).")
    restart_infra: InfraFault | None = Field(None, description="Stop and start RabbitMQ or PostgreSQL.")
    resources: ResourcesFault | None = Field(None, description="Change a deployment's memory or CPU limit.")

    def _actions(self) -> list[FaultAction]:
        candidates = (self.scale, self.kill_pod, self.restart, self.pause, self.restart_infra, self.resources)
        return [a for a in candidates if a is not None]

    @property
    def action(self) -> FaultAction:
        """The one action this fault sets (the model holds to exactly one)."""
        return self._actions()[0]
