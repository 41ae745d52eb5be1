"""The LoadTest resource as typed models: the one source of the spec's rules and the CRD schema.

Field names are the YAML names (camelCase); every invalid spec raises `SpecError`, whose
lines each start with the path of the field at fault (`spec.load.rate: ...`).
The status models live in `elves.engine.status` and are re-exported here.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

import yaml
from pydantic import (
    AfterValidator, BeforeValidator, Field, PlainValidator, TypeAdapter, ValidationError, WithJsonSchema, create_model,
    field_validator,
)

from elves.constants import API_GROUP, API_VERSION, DEPLOYMENTS, KIND, TUNABLES
from elves.engine.modelbase import Rule, SpecModel
from elves.engine.scenarios import BUILTIN_SCENARIOS, EXEC_NAME_PATTERN, SCENARIO_NAMES, BuiltinScenario
from elves.engine.status import LoadTestStatus
from elves.engine.units import CPU_PATTERN, MEMORY_PATTERN, Cpu, Duration, Memory, Rate

__all__ = ["LoadTest", "LoadTestSpec", "LoadTestStatus", "SpecError", "load_file", "parse_loadtest"]
Deployment = Literal[DEPLOYMENTS]  # type: ignore[valid-type]

ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
DNS_LABEL_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS_SUBDOMAIN_PATTERN = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"
QUEUE_NAME_PATTERN = r"^[A-Za-z0-9_.:-]+$"


def _env_value(value: Any) -> Any:
    if not isinstance(value, str):
        raise ValueError(f"{value!r} must be a string: quote it (\"{value}\"), as Kubernetes env values are strings")
    return value


EnvValue = Annotated[str, BeforeValidator(_env_value)]
EnvName = Annotated[str, Field(pattern=ENV_NAME_PATTERN)]
ExecName = Annotated[str, Field(pattern=EXEC_NAME_PATTERN)]


# --- system -------------------------------------------------------------------------

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

    replicas: Replicas = Field(default_factory=Replicas)
    resources: Resources = Field(default_factory=Resources)
    env: Env = Field(default_factory=Env)

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


# --- load ---------------------------------------------------------------------------

class ConfigMapScript(SpecModel):
    name: str = Field(pattern=DNS_LABEL_PATTERN, max_length=253, description="ConfigMap holding the script.")
    file: str = Field(pattern=r"^[A-Za-z0-9_.-]+$", description="Key of the script (or k6 archive) in the ConfigMap.")


class Script(SpecModel):
    rules = (Rule("has(self.configMap) != has(self.path)", "set exactly one of configMap or path",
                  lambda s: (s.config_map is None) == (s.path is None)),)

    config_map: ConfigMapScript | None = None
    path: str | None = Field(None, min_length=1, description="A script file (local mode), relative to the LoadTest file.")


class Stage(SpecModel):
    rules = (Rule("has(self.target) != has(self.users)", "set exactly one of target (a rate) or users",
                  lambda s: (s.target is None) == (s.users is None)),)

    duration: Duration = Field(description="How long this stage ramps towards its target.")
    target: Rate | None = Field(None, description="The arrival rate reached at the end of the stage (open model), e.g. 120/min.")
    users: int | None = Field(None, ge=0, le=100000,
                              description="The users (VUs) reached at the end of the stage (closed model): a linear ramp of users.")


class Vus(SpecModel):
    rules = (Rule("!has(self.max) || self.max >= self.preAllocated", "max must be at least preAllocated",
                  lambda v: v.max is not None and v.max < v.pre_allocated,
                  lambda v: f"max ({v.max}) must be at least preAllocated ({v.pre_allocated})"),)

    pre_allocated: int = Field(ge=1, le=100000, description="k6 preAllocatedVUs over all scenarios.")
    max: int | None = Field(None, ge=1, le=100000, description="k6 maxVUs over all scenarios.")


Profile = Literal["warmup", "spike", "endurance", "breakpoint"]
Scenario = Literal["system-mix", "registry-mix", "ingestor", "journeys"]
assert Scenario.__args__ == SCENARIO_NAMES  # type: ignore[attr-defined]


DEFAULT_WARMUP_SECONDS = 60.0  # the longest default warm-up of a breakpoint ramp


def _stages_seconds(load: Load) -> float:
    return sum(s.duration.seconds for s in load.stages or [])


def _unknown_mix_keys(load: Load, scenario: BuiltinScenario) -> list[str]:
    if load.mix is None or load.scenario != scenario.name:
        return []
    return [k for k in load.mix if k not in scenario.execs]


def _mix_rule(scenario: BuiltinScenario) -> Rule:
    allowed = ", ".join(f"'{e}'" for e in scenario.execs)
    return Rule(
        f"!has(self.mix) || !has(self.scenario) || self.scenario != '{scenario.name}'"
        f" || self.mix.all(k, k in [{allowed}])",
        f"mix keys of scenario {scenario.name} must be among: {', '.join(scenario.execs)}",
        lambda load: bool(_unknown_mix_keys(load, scenario)),
        lambda load: f"mix key {_unknown_mix_keys(load, scenario)[0]!r} is not an endpoint of scenario"
                     f" {scenario.name}; use one of: {', '.join(scenario.execs)}",
    )


class Load(SpecModel):
    rules = (
        Rule("has(self.scenario) != has(self.script)", "set exactly one of scenario or script",
             lambda load: (load.scenario is None) == (load.script is None)),
        Rule("!has(self.stages) || self.stages.all(s, has(s.target)) || self.stages.all(s, has(s.users))",
             "stages are all rates (target, open model) or all users (closed model)",
             lambda load: len({s.target is None for s in load.stages or []}) > 1),
        Rule("!has(self.rate) || !has(self.stages) || self.stages.all(s, has(s.target))",
             "stages of users (closed model) exclude rate",
             lambda load: load.rate is not None and any(s.users is not None for s in load.stages or [])),
        Rule("!has(self.iterations) || (!has(self.rate) && !has(self.stages))",
             "iterations (a fixed number, closed model) exclude rate and stages",
             lambda load: load.iterations is not None and (load.rate is not None or load.stages is not None)),
        Rule("!has(self.profile) || has(self.rate)", "profile needs rate (the peak rate)",
             lambda load: load.profile is not None and load.rate is None),
        Rule("!has(self.profile) || !has(self.stages)",
             "profile and stages exclude each other: the profile makes the stages",
             lambda load: load.profile is not None and load.stages is not None),
        Rule("has(self.duration) || has(self.stages)", "set duration (or stages, whose durations add up to it)",
             lambda load: load.duration is None and load.stages is None),
        Rule("!has(self.duration) || !has(self.stages)"
             " || self.stages.map(s, duration(s.duration)).sum() <= duration(self.duration)",
             "the stages last longer than duration",
             lambda load: load.duration is not None and load.stages is not None
             and _stages_seconds(load) > load.duration.seconds + 1e-9,
             lambda load: f"the stages last {_stages_seconds(load):g}s, longer than duration {load.duration}"),
        Rule("!has(self.warmup) || duration(self.warmup) == duration('0s') || has(self.profile)",
             "warmup needs a profile (its ramp follows the warm-up)",
             lambda load: load.warmup is not None and load.warmup.seconds > 0 and load.profile is None),
        Rule("!has(self.warmup) || !has(self.duration) || duration(self.warmup) < duration(self.duration)",
             "warmup must be shorter than duration",
             lambda load: load.warmup is not None and load.duration is not None
             and load.warmup.seconds >= load.duration.seconds),
        Rule("!has(self.mix) || self.mix.exists(k, self.mix[k] > 0.0)", "mix needs at least one weight above 0",
             lambda load: load.mix is not None and not any(w > 0 for w in load.mix.values())),
    ) + tuple(_mix_rule(scenario) for scenario in BUILTIN_SCENARIOS.values())

    scenario: Scenario | None = Field(None, description="A built-in scenario (loadtests/scenarios/<name>.js).")
    script: Script | None = Field(None, description="Your own k6 script instead of a built-in scenario.")
    rate: Rate | None = Field(None, description="Total arrival rate over the mix (open model), e.g. 120/min; the peak for a profile.")
    mix: dict[ExecName, Annotated[float, Field(ge=0)]] | None = Field(
        None, description="Relative weights per endpoint (exec function); default per scenario.")
    stages: list[Stage] | None = Field(None, min_length=1, max_length=100, description="A rate profile instead of a flat rate.")
    profile: Profile | None = Field(None, description="warmup | spike | endurance | breakpoint: stages made from rate and duration.")
    duration: Duration | None = Field(None, description="How long the load runs, e.g. 10m.")
    warmup: Duration | None = Field(
        None, description="The first part of a profile's load: a ramp to a tenth of the peak rate, shown in the"
        " report but left out of the verdict and the breakpoint, so that a cold JVM is not reported as the"
        " system's limit. Default for profile breakpoint: a fifth of the duration, at most 60s; 0s turns it off.")
    parallelism: int = Field(1, ge=1, le=100, description="Number of k6 runners sharing the load.")
    users: int = Field(10, ge=1, le=100000, description="Synthetic users, one bearer token each; without rate and"
                       " stages of rates (a closed model) also the VUs, each looping over its endpoint.")
    iterations: int | None = Field(None, ge=1, le=10000000, description="A fixed number of iterations the users share"
                                   " (closed model); duration is the longest they may take.")
    vus: Vus | None = Field(None, description="Override the computed k6 VU pool.")

    @property
    def warmup_seconds(self) -> float:
        """The warm-up at the start of the load (0: none)."""
        if self.warmup is not None:
            return self.warmup.seconds
        if self.profile == "breakpoint":
            return min(DEFAULT_WARMUP_SECONDS, self.duration_seconds / 5)
        return 0.0

    @property
    def closed(self) -> bool:
        """No arrival rate: `users` VUs loop (constant, ramped by stages of users, or for a
        fixed number of iterations) and the load slows down with the system."""
        return self.rate is None and not any(s.target is not None for s in self.stages or [])

    @property
    def duration_seconds(self) -> float:
        """The planned length of the load: duration, or the stages' total."""
        return self.duration.seconds if self.duration is not None else _stages_seconds(self)

    @property
    def effective_mix(self) -> dict[str, float]:
        """The mix with the scenario's default filled in, zero weights dropped."""
        if self.mix is not None:
            mix = self.mix
        elif self.scenario is not None:
            mix = BUILTIN_SCENARIOS[self.scenario].default_mix
        else:
            mix = {"default": 1.0}  # a custom script without a mix: its default function
        return {k: float(w) for k, w in mix.items() if w > 0}


# --- faults -------------------------------------------------------------------------

class FaultAction(SpecModel):
    """What a fault does; `kind` is its key in the YAML (scale, killPod, ...)."""

    kind: ClassVar[str]

    def params(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True)

    def describe(self) -> str:
        """"scale(deployment=ingestor, replicas=0)": the action and its parameters as written."""
        return f"{self.kind}({', '.join(f'{k}={v}' for k, v in self.params().items())})"

    def label(self) -> str:
        """A few words for a plot marker: "killPod registry", "scale ingestor to 0"."""
        return f"{self.kind} {getattr(self, 'deployment', '')}".strip()


class ScaleFault(FaultAction):
    kind = "scale"
    deployment: Deployment
    replicas: int = Field(ge=0, le=100)

    def label(self) -> str:
        return f"scale {self.deployment} to {self.replicas}"


class KillPodFault(FaultAction):
    kind = "killPod"
    deployment: Deployment


class RestartFault(FaultAction):
    kind = "restart"
    deployment: Deployment


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
    kill_pod: KillPodFault | None = Field(None, description="SIGKILL the main process of one replica; it restarts in place (on a cluster: kill -9 through exec).")
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


# --- objectives ---------------------------------------------------------------------

LATENCY_METRICS = ("http_req_duration_p50", "http_req_duration_p90", "http_req_duration_p95", "http_req_duration_p99")
MEAN_LATENCY = "http_req_duration_mean"
HTTP_METRICS = ("http_req_failed_rate", "http_reqs_rate") + LATENCY_METRICS + (MEAN_LATENCY,)  # take `endpoint`
QUEUE_METRICS = ("queue_depth_max", "queue_depth_final")  # take `queue`
# unready_seconds: the longest stretch with fewer ready replicas than desired ("back within 60 s").
POD_METRICS = ("pod_restarts", "oom_kills", "unready_seconds")  # take `deployment`
TIME_METRICS = LATENCY_METRICS + (MEAN_LATENCY, "drain_seconds", "unready_seconds")  # values may be durations
# throughput_stability: 2xx answers in the load's last minute over its first (1 = steady).
METRICS = ("lost_requests", "lost_logs", "duplicates", "dropped_iterations", "drain_seconds",
           "throughput_stability") + HTTP_METRICS + QUEUE_METRICS + POD_METRICS
Metric = Literal[METRICS]  # type: ignore[valid-type]
Op = Literal["<", "<=", "==", "!=", ">=", ">"]
SLO_VALUE_PATTERN = r"^-?[0-9]+(\.[0-9]+)?(ms|s|m|h)?$"


def _slo_value(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"{value!r} is not a number or a duration (0.01, 500, 100ms)")
    if isinstance(value, str):
        if not re.fullmatch(SLO_VALUE_PATTERN, value):
            raise ValueError(f"{value!r} is not a number or a duration (0.01, 500, 100ms)")
        if not value.lstrip("-").replace(".", "", 1).isdigit():
            return Duration.parse(value)  # the objective checks its metric is a time
        return float(value)
    return float(value)


SloValue = Annotated[
    float | Duration,
    PlainValidator(_slo_value),
    # A number or a duration string: kube-apiserver's structural schemas have no such
    # union (int-or-string refuses 0.01), so the CRD leaves this one field untyped and
    # the engine's model is what rejects a bad value (with its field path).
    WithJsonSchema({"x-elves-number-or-duration": SLO_VALUE_PATTERN}),
]


def _names(names: tuple[str, ...]) -> str:
    return "[" + ", ".join(f"'{n}'" for n in names) + "]"


class Objective(SpecModel):
    """One service-level objective: a built-in metric or a raw PromQL expression against a value."""

    rules = (
        Rule("has(self.metric) != has(self.promql)", "set exactly one of metric or promql",
             lambda o: (o.metric is None) == (o.promql is None)),
        Rule(f"!has(self.endpoint) || (has(self.metric) && self.metric in {_names(HTTP_METRICS)})",
             "endpoint applies only to the http_* metrics",
             lambda o: o.endpoint is not None and o.metric not in HTTP_METRICS),
        Rule(f"!has(self.queue) || (has(self.metric) && self.metric in {_names(QUEUE_METRICS)})",
             "queue applies only to queue_depth_max and queue_depth_final",
             lambda o: o.queue is not None and o.metric not in QUEUE_METRICS),
        Rule(f"!has(self.deployment) || (has(self.metric) && self.metric in {_names(POD_METRICS)})",
             "deployment applies only to pod_restarts, oom_kills and unready_seconds",
             lambda o: o.deployment is not None and o.metric not in POD_METRICS),
        # No CEL: kube-apiserver's CEL cannot see an untyped field such as `value`.
        Rule(None, "a duration value needs a time metric (http_req_duration_*, drain_seconds, unready_seconds)",
             lambda o: isinstance(o.value, Duration) and o.metric not in TIME_METRICS,
             lambda o: f"value {o.value.text!r} is a duration but {o.metric or 'promql'} is not a time;"
                       " a duration value needs a time metric (http_req_duration_*, drain_seconds, unready_seconds)"),
    )

    metric: Metric | None = Field(None, description="A built-in metric (see the docs for the list).")
    promql: str | None = Field(None, min_length=1, description="A PromQL expression; its first value is compared.")
    endpoint: ExecName | None = Field(None, description="Only this endpoint (http_* metrics).")
    queue: str | None = Field(None, pattern=QUEUE_NAME_PATTERN, description="Only this queue (queue_depth_*).")
    deployment: Deployment | None = Field(None, description="Only this deployment (pod_restarts, oom_kills, unready_seconds).")
    op: Op
    value: SloValue

    @property
    def target(self) -> float:
        """The value as a number; durations in seconds."""
        return self.value.seconds if isinstance(self.value, Duration) else float(self.value)

    @property
    def name(self) -> str:
        """How the check is called in the verdict: metric{filter} or the PromQL."""
        if self.promql is not None:
            return self.promql
        selector = self.endpoint or self.queue or self.deployment
        return f"{self.metric}{{{selector}}}" if selector else str(self.metric)


DEFAULT_OBJECTIVES = (
    {"metric": "lost_requests", "op": "==", "value": 0},
    {"metric": "http_req_failed_rate", "op": "<", "value": 0.01},
    {"metric": "dropped_iterations", "op": "==", "value": 0},
)


# --- the spec -----------------------------------------------------------------------

class Drain(SpecModel):
    timeout: Duration = Field(Duration.parse("5m"), description="Longest wait, after the load, for empty queues and a complete ledger.")


class RunnerQuantities(SpecModel):
    cpu: Annotated[str, Field(pattern=CPU_PATTERN)] | None = Field(None, description="e.g. 500m.")
    memory: Annotated[str, Field(pattern=MEMORY_PATTERN)] | None = Field(None, description="e.g. 1Gi.")


class RunnerResources(SpecModel):
    requests: RunnerQuantities | None = None
    limits: RunnerQuantities | None = None


class Runner(SpecModel):
    """Where and how the k6 runner pods run (cluster only; k6-operator's TestRun.spec.runner)."""

    resources: RunnerResources | None = Field(
        None, description="Requests and limits of each runner (an OOMKilled runner ends the test in Error: raise memory).")
    node_selector: dict[str, str] | None = Field(None, description="Labels the runners' nodes must have.")
    tolerations: list[dict[str, Any]] | None = Field(None, max_length=20, description="As in a pod spec.")
    affinity: dict[str, Any] | None = Field(None, description="As in a pod spec (e.g. keep runners off the system's nodes).")
    separate: bool = Field(False, description="At most one runner per node (k6-operator's separate).")
    env_from_secrets: list[Annotated[str, Field(pattern=DNS_SUBDOMAIN_PATTERN, max_length=253)]] | None = Field(
        None, max_length=20, description="Secrets in the LoadTest's namespace whose keys become the runners' "
                                         "environment (for custom scripts: tokens, hosts).")


LOAD_SWEEP_FIELDS = ("rate", "users", "parallelism")  # spec.load's fields a sweep may set
SWEEP_PATH_PATTERN = (r"^(system\.(replicas|resources|env)\.(" + "|".join(DEPLOYMENTS)
                      + r")(\.[A-Za-z_][A-Za-z0-9_]*)?|load\.(" + "|".join(LOAD_SWEEP_FIELDS) + "))$")
SWEEP_KEYS = "sweep keys are system.replicas.<deployment>, system.resources.<deployment>.<memory|cpu>," \
             " system.env.<deployment>.<NAME>, load.rate, load.users or load.parallelism"


def _sweep_value(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"{value!r}: a sweep value is an integer or a string (quote decimals: \"{value}\")")
    return value


# int-or-string, as Kubernetes has it (and as CEL can still see the sweep map).
SweepValue = Annotated[int | str, BeforeValidator(_sweep_value), WithJsonSchema({"x-kubernetes-int-or-string": True})]


def _late_fault(spec: LoadTestSpec) -> int | None:
    """The index of the first fault not before the end of the load."""
    end = spec.load.duration_seconds
    return next((i for i, fault in enumerate(spec.faults) if fault.at.seconds >= end), None)


def _thresholds(text: str | None) -> str | None:
    from elves.engine.compare import parse_thresholds  # late: compare reads summaries, which need these models

    parse_thresholds(text)
    return text


class Baseline(SpecModel):
    """An earlier run to compare this one with; each rule of `elves compare` becomes a check of the verdict."""

    report: str = Field(min_length=1, description="The earlier run's summary.json or report directory,"
                        " relative to the LoadTest file (local mode).")
    fail_on: Annotated[str | None, AfterValidator(_thresholds)] = Field(
        None, description="Rules as `elves compare --fail-on` takes them, on top of its default rules"
                          " (`elves compare --help`), e.g. p99:+25%,restarts:off.")


class LoadTestSpec(SpecModel):
    rules = (
        Rule("!has(self.faults) || !has(self.load.duration)"
             " || self.faults.all(f, duration(f.at) < duration(self.load.duration))",
             "every fault must happen before the load ends (at < load.duration)",
             lambda spec: _late_fault(spec) is not None,
             lambda spec: f"faults[{_late_fault(spec)}].at = {spec.faults[_late_fault(spec)].at} is not before"  # type: ignore[index]
                          f" the end of the load ({spec.load.duration_seconds:g}s)"),
    )
    # Checked for each key of spec.sweep by its field validator.
    field_rules = (
        Rule("!has(self.sweep) || self.sweep.all(k, k.matches('" + SWEEP_PATH_PATTERN.replace("\\", "\\\\") + "'))",
             SWEEP_KEYS, lambda path: not re.fullmatch(SWEEP_PATH_PATTERN, path),
             lambda path: f"{path!r}: {SWEEP_KEYS}"),
    )

    reset: bool = Field(False, description="Restart the services and empty the database before each run.")
    system: System = Field(default_factory=System)
    load: Load
    faults: list[Fault] = Field(default_factory=list, max_length=100)
    sweep: dict[str, Annotated[list[SweepValue], Field(min_length=1, max_length=50)]] | None = Field(
        None, max_length=2, description="Repeat the run for each value; two keys make a grid.")
    drain: Drain = Field(default_factory=Drain)
    slo: list[Objective] | None = Field(
        None, max_length=100, description="Objectives; when absent: nothing lost, under 1 % errors, no dropped iterations.")
    runner: Runner | None = Field(None, description="The k6 runner pods: resources and scheduling (cluster only).")
    ttl_seconds_after_finished: int | None = Field(
        None, ge=0, le=31_536_000, description="Delete the LoadTest this many seconds after it ended (cluster only; "
                                               "its report ConfigMap stays).")
    baseline: Baseline | None = Field(None, description="Compare with an earlier run: its thresholds join the verdict"
                                      " as checks (a gate against regressions).")

    @field_validator("sweep")
    @classmethod
    def _sweep_paths(cls, sweep: dict[str, list[Any]] | None) -> dict[str, list[Any]] | None:
        for path, values in (sweep or {}).items():
            cls.field_rules[0].check(path)
            for index, value in enumerate(values):
                try:
                    if path.startswith("load."):  # checked as spec.load checks the field
                        field = Load.model_fields[path.removeprefix("load.")]
                        TypeAdapter(Annotated[(field.annotation, *field.metadata)] if field.metadata
                                    else field.annotation).validate_python(value)
                    else:
                        System.model_validate(set_path({}, path, value))
                except ValidationError as exc:
                    detail = "; ".join(_message(e) for e in exc.errors())
                    raise ValueError(f"{path}[{index}] = {value!r}: {detail}") from None
        return sweep

    @property
    def objectives(self) -> list[Objective]:
        """The objectives to check: the spec's, or the defaults when slo is absent."""
        if self.slo is not None:
            return list(self.slo)
        return [Objective.model_validate(o) for o in DEFAULT_OBJECTIVES]


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


class Metadata(SpecModel):
    model_config = {**SpecModel.model_config, "extra": "allow"}  # labels, annotations, uid, ... pass through

    name: str = Field(pattern=DNS_LABEL_PATTERN, max_length=63, description="The test's name (a DNS label).")
    namespace: str | None = Field(None, pattern=DNS_LABEL_PATTERN, max_length=63)


class LoadTest(SpecModel):
    api_version: Literal[f"{API_GROUP}/{API_VERSION}"]  # type: ignore[valid-type]
    kind: Literal[KIND]  # type: ignore[valid-type]
    metadata: Metadata
    spec: LoadTestSpec
    status: LoadTestStatus | None = None

    @property
    def name(self) -> str:
        return self.metadata.name


# --- errors -------------------------------------------------------------------------

class SpecError(ValueError):
    """An invalid LoadTest; each line names the field at fault."""

    def __init__(self, source: str, problems: list[str]):
        self.source = source
        self.problems = problems
        super().__init__(f"{source}: invalid LoadTest\n" + "\n".join(f"  {p}" for p in problems))


def _location(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text else "") + str(part)
    return text


def _message(error: dict[str, Any]) -> str:
    message = error["msg"]
    if message.startswith("Value error, "):
        message = message[len("Value error, "):]
    if error["type"] == "extra_forbidden":
        allowed = _allowed_fields(error["loc"][:-1])
        message = "unknown field" + (f" (allowed here: {', '.join(allowed)})" if allowed else "")
    elif error["type"] == "missing":
        message = "required field is missing"
    return message


def _allowed_fields(loc: tuple[Any, ...]) -> list[str]:
    """The YAML names a model accepts at `loc`, found by walking the models from LoadTest."""
    from typing import get_args, get_origin

    def unwrap(annotation: Any) -> Any:
        while True:
            origin = get_origin(annotation)
            if origin is Annotated:
                annotation = get_args(annotation)[0]
            elif origin in (list, dict):
                annotation = get_args(annotation)[-1]
            elif origin is not None and type(None) in get_args(annotation):
                annotation = next(a for a in get_args(annotation) if a is not type(None))
            else:
                return annotation

    model: Any = LoadTest
    for part in loc:
        if isinstance(part, int) or not (isinstance(model, type) and issubclass(model, SpecModel)):
            continue
        field = next((f for n, f in model.model_fields.items() if (f.alias or n) == part), None)
        if field is None:
            return []
        model = unwrap(field.annotation)
    if isinstance(model, type) and issubclass(model, SpecModel):
        return [f.alias or n for n, f in model.model_fields.items()]
    return []


def spec_problems(exc: ValidationError, prefix: tuple[Any, ...] = ()) -> list[str]:
    """One line per pydantic error: `spec.load.rate: '12/minute' is not a rate: ...`."""
    return [f"{_location(prefix + tuple(e['loc'])) or '(document)'}: {_message(e)}" for e in exc.errors()]


def parse_loadtest(document: Any, source: str = "LoadTest") -> LoadTest:
    """A LoadTest from a parsed YAML/JSON document, or SpecError naming every bad field."""
    if not isinstance(document, dict):
        raise SpecError(source, [f"(document): expected a LoadTest mapping, got {type(document).__name__}"])
    try:
        return LoadTest.model_validate(document)
    except ValidationError as exc:
        raise SpecError(source, spec_problems(exc)) from None


def load_file(path: str) -> list[LoadTest]:
    """Every LoadTest in a YAML file (several documents allowed); SpecError on the first bad one."""
    try:
        with open(path, encoding="utf-8") as handle:
            documents = [d for d in yaml.safe_load_all(handle) if d is not None]
    except OSError as exc:
        raise SpecError(path, [f"(file): cannot read: {exc.strerror}"]) from None
    except yaml.YAMLError as exc:
        raise SpecError(path, [f"(file): not valid YAML: {exc}".replace("\n", " ")]) from None
    if not documents:
        raise SpecError(path, ["(file): no LoadTest in this file"])
    tests = []
    for index, document in enumerate(documents):
        source = path if len(documents) == 1 else f"{path} (document {index + 1})"
        tests.append(parse_loadtest(document, source))
    return tests
