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
from pydantic import BeforeValidator, Field, PlainValidator, ValidationError, WithJsonSchema, field_validator, model_validator

from elves.constants import API_GROUP, API_VERSION, DEPLOYMENTS, KIND
from elves.engine.modelbase import CelRule, SpecModel
from elves.engine.scenarios import BUILTIN_SCENARIOS, EXEC_NAME_PATTERN, SCENARIO_NAMES
from elves.engine.status import LoadTestStatus
from elves.engine.units import Cpu, Duration, Memory, Rate

__all__ = ["LoadTest", "LoadTestSpec", "LoadTestStatus", "SpecError", "load_file", "parse_loadtest"]
Deployment = Literal["gateway", "registry", "ingestor"]
assert set(Deployment.__args__) == set(DEPLOYMENTS)  # type: ignore[attr-defined]

ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
DNS_LABEL_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
QUEUE_NAME_PATTERN = r"^[A-Za-z0-9_.:-]+$"


def _env_value(value: Any) -> Any:
    if not isinstance(value, str):
        raise ValueError(f"{value!r} must be a string: quote it (\"{value}\"), as Kubernetes env values are strings")
    return value


EnvValue = Annotated[str, BeforeValidator(_env_value)]
EnvName = Annotated[str, Field(pattern=ENV_NAME_PATTERN)]
ExecName = Annotated[str, Field(pattern=EXEC_NAME_PATTERN)]


# --- system -------------------------------------------------------------------------

class Replicas(SpecModel):
    gateway: int | None = Field(None, ge=0, le=100, description="Replicas of the gateway.")
    registry: int | None = Field(None, ge=0, le=100, description="Replicas of the registry.")
    ingestor: int | None = Field(None, ge=0, le=100, description="Replicas of the ingestor.")


class ResourceLimits(SpecModel):
    memory: Memory | None = Field(None, description="Memory limit (locally: the JVM heap cap), e.g. 2Gi.")
    cpu: Cpu | None = Field(None, description="CPU limit, e.g. 500m.")


class Resources(SpecModel):
    gateway: ResourceLimits | None = None
    registry: ResourceLimits | None = None
    ingestor: ResourceLimits | None = None


EnvVars = dict[EnvName, EnvValue]


class Env(SpecModel):
    gateway: EnvVars | None = Field(None, description="Service settings of the gateway for this test.")
    registry: EnvVars | None = Field(None, description="Service settings of the registry for this test.")
    ingestor: EnvVars | None = Field(None, description="Service settings of the ingestor for this test.")


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
    cel_rules = (CelRule("has(self.configMap) != has(self.path)", "set exactly one of configMap or path"),)

    config_map: ConfigMapScript | None = None
    path: str | None = Field(None, min_length=1, description="A script file (local mode), relative to the LoadTest file.")

    @model_validator(mode="after")
    def _one_source(self) -> Script:
        if (self.config_map is None) == (self.path is None):
            raise ValueError(self.cel_rules[0].message)
        return self


class Stage(SpecModel):
    duration: Duration = Field(description="How long this stage ramps towards its target.")
    target: Rate = Field(description="The arrival rate reached at the end of the stage, e.g. 120/min.")


class Vus(SpecModel):
    cel_rules = (CelRule("!has(self.max) || self.max >= self.preAllocated", "max must be at least preAllocated"),)

    pre_allocated: int = Field(ge=1, le=100000, description="k6 preAllocatedVUs over all scenarios.")
    max: int | None = Field(None, ge=1, le=100000, description="k6 maxVUs over all scenarios.")

    @model_validator(mode="after")
    def _max_not_below(self) -> Vus:
        if self.max is not None and self.max < self.pre_allocated:
            raise ValueError(f"max ({self.max}) must be at least preAllocated ({self.pre_allocated})")
        return self


Profile = Literal["warmup", "spike", "endurance", "breakpoint"]
Scenario = Literal["system-mix", "registry-mix", "ingestor", "journeys"]
assert Scenario.__args__ == SCENARIO_NAMES  # type: ignore[attr-defined]


def _mix_rules() -> tuple[CelRule, ...]:
    rules = []
    for scenario in BUILTIN_SCENARIOS.values():
        allowed = ", ".join(f"'{e}'" for e in scenario.execs)
        rules.append(CelRule(
            f"!has(self.mix) || !has(self.scenario) || self.scenario != '{scenario.name}'"
            f" || self.mix.all(k, k in [{allowed}])",
            f"mix keys of scenario {scenario.name} must be among: {', '.join(scenario.execs)}",
        ))
    return tuple(rules)


class Load(SpecModel):
    cel_rules = (
        CelRule("has(self.scenario) != has(self.script)", "set exactly one of scenario or script"),
        CelRule("has(self.rate) || has(self.stages)", "set rate (a flat arrival rate) or stages"),
        CelRule("!has(self.profile) || has(self.rate)", "profile needs rate (the peak rate)"),
        CelRule("!has(self.profile) || !has(self.stages)", "profile and stages exclude each other: the profile makes the stages"),
        CelRule("has(self.duration) || has(self.stages)", "set duration (or stages, whose durations add up to it)"),
        CelRule(
            "!has(self.duration) || !has(self.stages)"
            " || self.stages.map(s, duration(s.duration)).sum() <= duration(self.duration)",
            "the stages last longer than duration",
        ),
        CelRule("!has(self.mix) || self.mix.exists(k, self.mix[k] > 0.0)", "mix needs at least one weight above 0"),
    ) + _mix_rules()

    scenario: Scenario | None = Field(None, description="A built-in scenario (loadtests/scenarios/<name>.js).")
    script: Script | None = Field(None, description="Your own k6 script instead of a built-in scenario.")
    rate: Rate | None = Field(None, description="Total arrival rate over the mix (open model), e.g. 120/min; the peak for a profile.")
    mix: dict[ExecName, Annotated[float, Field(ge=0)]] | None = Field(
        None, description="Relative weights per endpoint (exec function); default per scenario.")
    stages: list[Stage] | None = Field(None, min_length=1, max_length=100, description="A rate profile instead of a flat rate.")
    profile: Profile | None = Field(None, description="warmup | spike | endurance | breakpoint: stages made from rate and duration.")
    duration: Duration | None = Field(None, description="How long the load runs, e.g. 10m.")
    parallelism: int = Field(1, ge=1, le=100, description="Number of k6 runners sharing the load.")
    users: int = Field(10, ge=1, le=100000, description="Synthetic users, one bearer token each.")
    vus: Vus | None = Field(None, description="Override the computed k6 VU pool.")

    @model_validator(mode="after")
    def _consistent(self) -> Load:
        messages = [r.message for r in self.cel_rules]
        if (self.scenario is None) == (self.script is None):
            raise ValueError(messages[0])
        if self.rate is None and self.stages is None:
            raise ValueError(messages[1])
        if self.profile is not None and self.rate is None:
            raise ValueError(messages[2])
        if self.profile is not None and self.stages is not None:
            raise ValueError(messages[3])
        if self.duration is None and self.stages is None:
            raise ValueError(messages[4])
        if self.duration is not None and self.stages is not None:
            total = sum(s.duration.seconds for s in self.stages)
            if total > self.duration.seconds + 1e-9:
                raise ValueError(f"the stages last {total:g}s, longer than duration {self.duration}")
        if self.mix is not None:
            if not any(w > 0 for w in self.mix.values()):
                raise ValueError(messages[6])
            if self.scenario is not None:
                allowed = BUILTIN_SCENARIOS[self.scenario].execs
                unknown = [k for k in self.mix if k not in allowed]
                if unknown:
                    raise ValueError(f"mix key {unknown[0]!r} is not an endpoint of scenario {self.scenario};"
                                     f" use one of: {', '.join(allowed)}")
        return self

    @property
    def duration_seconds(self) -> float:
        """The planned length of the load: duration, or the stages' total."""
        if self.duration is not None:
            return self.duration.seconds
        return sum(s.duration.seconds for s in self.stages or [])

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
    cel_rules = (CelRule("has(self.memory) || has(self.cpu)", "set memory or cpu"),)

    deployment: Deployment
    memory: Memory | None = None
    cpu: Cpu | None = None

    @model_validator(mode="after")
    def _something(self) -> ResourcesFault:
        if self.memory is None and self.cpu is None:
            raise ValueError(self.cel_rules[0].message)
        return self

    def label(self) -> str:
        return f"resources {self.deployment} {self.memory or self.cpu or ''}".strip()


FAULT_ACTION_TYPES = (ScaleFault, KillPodFault, RestartFault, PauseFault, InfraFault, ResourcesFault)
FAULT_ACTIONS = tuple(t.kind for t in FAULT_ACTION_TYPES)


class Fault(SpecModel):
    cel_rules = (CelRule(
        "[" + ", ".join(f"has(self.{a})" for a in FAULT_ACTIONS) + "].filter(x, x).size() == 1",
        "set exactly one action: " + ", ".join(FAULT_ACTIONS),
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

    @model_validator(mode="after")
    def _one_action(self) -> Fault:
        if len(self._actions()) != 1:
            raise ValueError(self.cel_rules[0].message)
        return self

    @property
    def action(self) -> FaultAction:
        """The one action this fault sets (the model holds to exactly one)."""
        return self._actions()[0]


# --- objectives ---------------------------------------------------------------------

LATENCY_METRICS = ("http_req_duration_p50", "http_req_duration_p90", "http_req_duration_p95", "http_req_duration_p99")
HTTP_METRICS = ("http_req_failed_rate", "http_reqs_rate") + LATENCY_METRICS  # take `endpoint`
QUEUE_METRICS = ("queue_depth_max", "queue_depth_final")  # take `queue`
POD_METRICS = ("pod_restarts", "oom_kills")  # take `deployment`
TIME_METRICS = LATENCY_METRICS + ("drain_seconds",)  # values may be durations ("100ms")
METRICS = ("lost_requests", "lost_logs", "duplicates", "dropped_iterations", "drain_seconds") \
    + HTTP_METRICS + QUEUE_METRICS + POD_METRICS
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

    cel_rules = (
        CelRule("has(self.metric) != has(self.promql)", "set exactly one of metric or promql"),
        CelRule(f"!has(self.endpoint) || (has(self.metric) && self.metric in {_names(HTTP_METRICS)})",
                "endpoint applies only to the http_* metrics"),
        CelRule(f"!has(self.queue) || (has(self.metric) && self.metric in {_names(QUEUE_METRICS)})",
                "queue applies only to queue_depth_max and queue_depth_final"),
        CelRule(f"!has(self.deployment) || (has(self.metric) && self.metric in {_names(POD_METRICS)})",
                "deployment applies only to pod_restarts and oom_kills"),
    )
    # Checked here only: kube-apiserver's CEL cannot see an untyped field such as `value`.
    duration_needs_time: ClassVar[str] = "a duration value needs a time metric (http_req_duration_*, drain_seconds)"

    metric: Metric | None = Field(None, description="A built-in metric (see the docs for the list).")
    promql: str | None = Field(None, min_length=1, description="A PromQL expression; its first value is compared.")
    endpoint: ExecName | None = Field(None, description="Only this endpoint (http_* metrics).")
    queue: str | None = Field(None, pattern=QUEUE_NAME_PATTERN, description="Only this queue (queue_depth_*).")
    deployment: Deployment | None = Field(None, description="Only this deployment (pod_restarts, oom_kills).")
    op: Op
    value: SloValue

    @model_validator(mode="after")
    def _consistent(self) -> Objective:
        messages = [r.message for r in self.cel_rules]
        if (self.metric is None) == (self.promql is None):
            raise ValueError(messages[0])
        if self.endpoint is not None and self.metric not in HTTP_METRICS:
            raise ValueError(messages[1])
        if self.queue is not None and self.metric not in QUEUE_METRICS:
            raise ValueError(messages[2])
        if self.deployment is not None and self.metric not in POD_METRICS:
            raise ValueError(messages[3])
        if isinstance(self.value, Duration) and self.metric not in TIME_METRICS:
            raise ValueError(f"value {self.value.text!r} is a duration but {self.metric or 'promql'} is not a time;"
                             f" {self.duration_needs_time}")
        return self

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


SWEEP_PATH_PATTERN = r"^system\.(replicas|resources|env)\.(gateway|registry|ingestor)(\.[A-Za-z_][A-Za-z0-9_]*)?$"
def _sweep_value(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"{value!r}: a sweep value is an integer or a string (quote decimals: \"{value}\")")
    return value


# int-or-string, as Kubernetes has it (and as CEL can still see the sweep map).
SweepValue = Annotated[int | str, BeforeValidator(_sweep_value), WithJsonSchema({"x-kubernetes-int-or-string": True})]


class LoadTestSpec(SpecModel):
    cel_rules = (
        CelRule("!has(self.faults) || !has(self.load.duration)"
                " || self.faults.all(f, duration(f.at) < duration(self.load.duration))",
                "every fault must happen before the load ends (at < load.duration)"),
        CelRule("!has(self.sweep) || self.sweep.all(k, k.matches('" + SWEEP_PATH_PATTERN.replace("\\", "\\\\") + "'))",
                "sweep keys are system.replicas.<deployment>, system.resources.<deployment>.<memory|cpu>"
                " or system.env.<deployment>.<NAME>"),
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

    @field_validator("sweep")
    @classmethod
    def _sweep_paths(cls, sweep: dict[str, list[Any]] | None) -> dict[str, list[Any]] | None:
        for path, values in (sweep or {}).items():
            if not re.fullmatch(SWEEP_PATH_PATTERN, path):
                raise ValueError(f"{path!r}: {cls.cel_rules[1].message}")
            for index, value in enumerate(values):
                try:
                    System.model_validate(set_path({}, path, value))
                except ValidationError as exc:
                    detail = "; ".join(_message(e) for e in exc.errors())
                    raise ValueError(f"{path}[{index}] = {value!r}: {detail}") from None
        return sweep

    @model_validator(mode="after")
    def _faults_in_time(self) -> LoadTestSpec:
        end = self.load.duration_seconds
        for index, fault in enumerate(self.faults):
            if fault.at.seconds >= end:
                raise ValueError(f"faults[{index}].at = {fault.at} is not before the end of the load ({end:g}s)")
        return self

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
