"""spec: the whole LoadTest spec, with its sweep, drain, runner and baseline."""

from __future__ import annotations

import itertools
import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, TypeAdapter, ValidationError, WithJsonSchema, field_validator

from elves.constants import BUILTIN_SYSTEM_UNDER_TEST
from elves.engine.models.autoscaling import SCALE_FAULT_RULES
from elves.engine.models.workload_autoscaler import not_elves_deployments, written
from elves.engine.models.errors import message
from elves.engine.models.faults import Fault
from elves.engine.models.fields import DNS_LABEL_PATTERN, DNS_SUBDOMAIN_PATTERN
from elves.engine.models.load import Load
from elves.engine.models.modelbase import Rule, SpecModel
from elves.engine.models.objectives import DEFAULT_OBJECTIVES, Objective
from elves.engine.models.settable import allowed_settings, settings_problems
from elves.engine.models.system import System, set_path
from elves.engine.models.target import builtin_spec
from elves.engine.models.thresholds import parse_thresholds
from elves.engine.models.units import CPU_PATTERN, MEMORY_PATTERN, Duration


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


LOAD_SWEEP_FIELDS = ("rate", "users", "parallelism", "duration")  # spec.load's fields a sweep may set
# A workload in a sweep key is a DNS label: the key's dots separate its parts.
_WORKLOAD_KEY = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
SWEEP_PATH_PATTERN = (r"^(system\.(replicas\." + _WORKLOAD_KEY + r"|resources\." + _WORKLOAD_KEY + r"\.(memory|cpu)"
                      + r"|env\." + _WORKLOAD_KEY + r"\.[A-Za-z_][A-Za-z0-9_]*"
                      + r"|autoscaling\." + _WORKLOAD_KEY + r"\.[A-Za-z_][A-Za-z0-9_]*)"
                      + r"|load\.(" + "|".join(LOAD_SWEEP_FIELDS) + r")|load\.mix\.[A-Za-z_][A-Za-z0-9_]*)$")
SWEEP_KEYS = ("sweep keys are system.replicas.<workload>, system.resources.<workload>.<memory|cpu>,"
              " system.env.<workload>.<NAME>, system.autoscaling.<workload>.<field>, load.rate, load.users,"
              " load.parallelism, load.duration or load.mix.<endpoint>")
MAX_SWEEP_KEYS = 3
MAX_SWEEP_POINTS = 200  # a grid's runs: each one a whole test


def _sweep_value(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"{value!r}: a sweep value is an integer or a string (quote decimals: \"{value}\")")
    return value


# int-or-string, as Kubernetes has it (and as CEL can still see the sweep map).
SweepValue = Annotated[int | str, BeforeValidator(_sweep_value), WithJsonSchema({"x-kubernetes-int-or-string": True})]


def _late_fault(spec: LoadTestSpec) -> int | None:
    """The index of the first fault not before the end of the load (after an auto warm-up, the
    measured load's: faults count from its start; CEL checks only the duration)."""
    end = spec.load.measured_seconds
    return next((i for i, fault in enumerate(spec.faults) if fault.at.seconds >= end), None)


def _load_end_text(load: Any) -> str:
    """The length faults must fit in, said the way the spec sets it."""
    if load.warmup_auto:
        return f"{load.measured_seconds:g}s: after an auto warm-up faults count from the load's start"
    return f"{load.duration_seconds:g}s"


def sweep_combinations(sweep: dict[str, list[Any]] | None) -> list[dict[str, Any]]:
    """The sweep's points as {key: value}, the grid's first key outermost ([{}]: no sweep)."""
    keys = list(sweep or {})
    return [dict(zip(keys, values)) for values in itertools.product(*(sweep[k] for k in keys))]  # type: ignore[index]


def point_documents(system: System, load: Load, values: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """spec.system and spec.load as one sweep point writes them (`values`: key -> value); a
    load.mix.<endpoint> share changes that share of the mix the load runs (the scenario's default
    where it sets none)."""
    # Autoscaling as written: another system's workload may bear one of Elves' deployments' names,
    # and its settings are read against its own trigger, not filled with the deployment's defaults.
    system_document = {**system.model_dump(by_alias=True, exclude_none=True), "autoscaling": written(system.autoscaling)}
    load_document = load.model_dump(by_alias=True, exclude_none=True)
    for key, value in values.items():
        if key.startswith("load.mix."):
            load_document["mix"] = {**(load_document.get("mix") or load.effective_mix), key.split(".", 2)[2]: value}
        elif key.startswith("load."):
            load_document[key.split(".", 1)[1]] = value
        else:
            system_document = set_path(system_document, key, value)
    return system_document, load_document


def _broken_sweep_point(spec: LoadTestSpec) -> str | None:
    """The first sweep point that breaks a rule of the spec as the run will have it (e.g. replicas
    set for a deployment the point hands to an autoscaler, a fault after a swept duration), said
    with the point's values; None when all hold."""
    if not spec.sweep:
        return None
    if len(combinations := sweep_combinations(spec.sweep)) > MAX_SWEEP_POINTS:
        return f"{len(combinations)} points, more than the {MAX_SWEEP_POINTS} runs a sweep may make: use fewer values"
    base = spec.model_dump(by_alias=True, exclude_none=True, exclude={"sweep"})
    for values in combinations:
        system, load = point_documents(spec.system, spec.load, values)
        try:
            LoadTestSpec.model_validate({**base, "system": system, "load": load})
        except ValidationError as exc:
            point = ", ".join(f"{k} = {v!r}" for k, v in values.items())
            return f"the sweep point {point}: {'; '.join(message(e) for e in exc.errors())}"
    return None


def _own_settings_problems(spec: LoadTestSpec) -> list[str]:
    """Without spec.target, what spec.system and its sweeps set of Elves' own system that it does not offer."""
    if spec.target is not None:  # checked against the target once it is resolved (elves.engine.planning.target_scope)
        return []
    return settings_problems(spec.system, spec.sweep, allowed_settings(builtin_spec()), "Elves' own system")


def _own_settings_rule() -> Rule:
    """The CRD's form of _own_settings_problems: a LoadTest without a target sets only Elves'
    deployments, their resources and their declared tunables (constants.TUNABLES)."""
    allowed = allowed_settings(builtin_spec())

    def listed(names: Any) -> str:
        return "[" + ", ".join(f"'{n}'" for n in names) + "]"

    env = " || ".join(f"(k == '{w}' && self.system.env[k].all(n, n in {listed(s.env)}))" for w, s in allowed.items())
    sweep_keys = ([f"system.replicas.{w}" for w in allowed]
                  + [f"system.resources.{w}.{part}" for w, s in allowed.items() if s.resources for part in ("memory", "cpu")]
                  + [f"system.env.{w}.{n}" for w, s in allowed.items() for n in s.env])
    resourced = [w for w, s in allowed.items() if s.resources]
    cel = ("has(self.target) || ("
           f"(!has(self.system) || ((!has(self.system.replicas) || self.system.replicas.all(k, k in {listed(allowed)}))"
           f" && (!has(self.system.resources) || self.system.resources.all(k, k in {listed(resourced)}))"
           f" && (!has(self.system.env) || self.system.env.all(k, {env}))))"
           " && (!has(self.sweep) || self.sweep.all(k, !k.startsWith('system.') || k.startsWith('system.autoscaling.')"
           f" || k in {listed(sweep_keys)})))")
    return Rule(cel, "without spec.target, spec.system and system sweeps set only Elves' deployments"
                     f" ({', '.join(allowed)}), their resources and their declared tunables",
                lambda spec: bool(_own_settings_problems(spec)),
                lambda spec: "; ".join(p.removeprefix("spec.") for p in _own_settings_problems(spec)))


def _thresholds(text: str | None) -> str | None:
    parse_thresholds(text)
    return text


# spec.baseline.pick: which earlier report of a LoadTest a baseline takes (results.compare.history
# says what each value takes).
Pick = Literal["lastPassed"]
DEFAULT_PICK: Pick = "lastPassed"


class Baseline(SpecModel):
    """An earlier run to compare this one with; each rule of `elves compare` becomes a check of the verdict."""

    rules = (
        Rule("has(self.report) != has(self.loadTest)",
             "set exactly one of report (a summary file, local mode) or loadTest (an earlier run from the report history)",
             lambda b: (b.report is None) == (b.load_test is None)),
        Rule("!has(self.pick) || has(self.loadTest)", "pick chooses among the reports of loadTest: set loadTest",
             lambda b: b.pick is not None and b.load_test is None),
    )
    cluster_rules = (
        Rule("!has(self.report)",
             "report is a file path, which the operator cannot read: on a cluster name the earlier run's LoadTest"
             " instead (baseline: {loadTest: NAME, pick: lastPassed})",
             lambda b: b.report is not None, field_path=".report"),
    )

    report: str | None = Field(None, min_length=1, description="The earlier run's summary.json or report directory,"
                               " relative to the LoadTest file (local mode only; refused on a cluster).")
    load_test: str | None = Field(
        None, pattern=DNS_LABEL_PATTERN, max_length=63,
        description="The earlier run by its LoadTest's name (this one's own for a gate against its last good run):"
                    " one of its reports in this namespace, as pick chooses (the report ConfigMaps on a cluster,"
                    " the report directories of elves run locally).")
    pick: Pick | None = Field(None, description="Which report of loadTest: lastPassed (the default) is the newest"
                                                " whose verdict passed. When none fits, the baseline check fails.")
    fail_on: Annotated[str | None, AfterValidator(_thresholds)] = Field(
        None, description="Rules as `elves compare --fail-on` takes them, on top of its default rules"
                          " (`elves compare --help`), e.g. p99:+25%,restarts:off.")

    @property
    def chosen_pick(self) -> Pick:
        return self.pick or DEFAULT_PICK


class Target(SpecModel):
    """The system this test judges, a SystemUnderTest; without target, the built-in one (elves: Elves' own system)."""

    system_under_test: str = Field(
        pattern=DNS_SUBDOMAIN_PATTERN, max_length=253,
        description="The SystemUnderTest's name, in the LoadTest's namespace.")


class LoadTestSpec(SpecModel):
    rules = (
        Rule("!has(self.faults) || !has(self.load.duration)"
             " || self.faults.all(f, duration(f.at) < duration(self.load.duration))",
             "every fault must happen before the load ends (at < load.duration)",
             lambda spec: _late_fault(spec) is not None,
             lambda spec: f"faults[{_late_fault(spec)}].at = {spec.faults[_late_fault(spec)].at} is not before"  # type: ignore[index]
                          f" the end of the load ({_load_end_text(spec.load)})"),
        *SCALE_FAULT_RULES,
        _own_settings_rule(),
        # CEL cannot list the keys the CRD keeps as written (another system's workloads): the model
        # (elves validate, the operator) refuses them in a test of Elves' own.
        Rule(None, "without spec.target, spec.system.autoscaling names only Elves' deployments",
             lambda spec: spec.target is None and bool(not_elves_deployments(spec.system.autoscaling, spec.sweep)),
             lambda spec: "; ".join(p.removeprefix("spec.")
                                    for p in not_elves_deployments(spec.system.autoscaling, spec.sweep))),
        # CEL cannot build each point of a sweep: the model (elves validate, the operator's
        # admission) checks every point as the run will have it.
        Rule(None, "every sweep point must be valid", lambda spec: _broken_sweep_point(spec) is not None,
             lambda spec: f"sweep: {_broken_sweep_point(spec)}"),
    )
    # Checked for each key of spec.sweep by its field validator.
    field_rules = (
        Rule("!has(self.sweep) || self.sweep.all(k, k.matches('" + SWEEP_PATH_PATTERN.replace("\\", "\\\\") + "'))",
             SWEEP_KEYS, lambda path: not re.fullmatch(SWEEP_PATH_PATTERN, path),
             lambda path: f"{path!r}: {SWEEP_KEYS}"),
    )

    target: Target | None = None
    reset: bool = Field(False, description="Restart the services and empty the database before each run.")
    system: System = Field(default_factory=System)
    load: Load
    faults: list[Fault] = Field(default_factory=list, max_length=100)
    sweep: dict[str, Annotated[list[SweepValue], Field(min_length=1, max_length=50)]] | None = Field(
        None, max_length=MAX_SWEEP_KEYS, description="Repeat the run for each value; two or three keys make a grid"
                                                     f" (at most {MAX_SWEEP_POINTS} runs).")
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
                    if path.startswith("load.mix."):
                        TypeAdapter(Annotated[float, Field(ge=0)]).validate_python(value)
                    elif path.startswith("load."):  # checked as spec.load checks the field
                        field = Load.model_fields[path.removeprefix("load.")]
                        TypeAdapter(Annotated[(field.annotation, *field.metadata)] if field.metadata
                                    else field.annotation).validate_python(value)
                    else:
                        System.model_validate(set_path({}, path, value))
                except ValidationError as exc:
                    detail = "; ".join(message(e) for e in exc.errors())
                    raise ValueError(f"{path}[{index}] = {value!r}: {detail}") from None
        return sweep

    @property
    def system_under_test(self) -> str:
        """The SystemUnderTest this test judges: the one it names, or the built-in one."""
        return self.target.system_under_test if self.target else BUILTIN_SYSTEM_UNDER_TEST

    @property
    def objectives(self) -> list[Objective]:
        """The objectives to check: the spec's, or the defaults when slo is absent."""
        if self.slo is not None:
            return list(self.slo)
        return [Objective.model_validate(o) for o in DEFAULT_OBJECTIVES]

    @property
    def judges_drops(self) -> bool:
        """The LoadTest states how many dropped iterations it tolerates (its faults may cause some),
        so they are the system's to judge, not a sign of k6's limit (elves.engine.results.generator_limit)."""
        return any(o.metric == "dropped_iterations" for o in self.slo or [])
