"""spec.load: the scenario or script, the rate or users, stages and profiles, the VU pool."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from elves.engine.models.fields import DNS_LABEL_PATTERN, ExecName
from elves.engine.models.modelbase import Rule, SpecModel
from elves.engine.models.scenarios import BUILTIN_SCENARIOS, SCENARIO_NAMES, BuiltinScenario
from elves.engine.models.units import Duration, Rate, Warmup


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


# The longest an auto warm-up may take to settle, unless warmupTimeout says otherwise; at most
# half the duration, so a short test gets a short warm-up. 36 s was too short, and on a
# freshly started local stack 2 m at 100/s was too (bench/results/2026-11-26-warmup-auto-cold-
# stack.txt): then the report says so, and a longer warmupTimeout is the user's call, not a
# default that makes every breakpoint run minutes longer.
DEFAULT_WARMUP_TIMEOUT_SECONDS = 120.0


def _auto_warmup(load: Load) -> bool:
    return load.warmup.auto if load.warmup is not None else load.profile == "breakpoint"


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
        Rule("!has(self.warmup) || has(self.profile)"
             " || (self.warmup != 'auto' && duration(self.warmup) == duration('0s'))",
             "warmup needs a profile (its ramp follows the warm-up)",
             lambda load: load.warmup is not None and load.warmup.seconds != 0 and load.profile is None),
        Rule("!has(self.warmup) || !has(self.duration) || self.warmup == 'auto'"
             " || duration(self.warmup) < duration(self.duration)",
             "warmup must be shorter than duration",
             lambda load: load.warmup is not None and not load.warmup.auto and load.duration is not None
             and load.warmup.seconds >= load.duration.seconds),
        Rule("!has(self.warmupTimeout) || (has(self.warmup) ? self.warmup == 'auto'"
             " : has(self.profile) && self.profile == 'breakpoint')",
             "warmupTimeout needs warmup: auto (the default of profile breakpoint)",
             lambda load: load.warmup_timeout is not None and not _auto_warmup(load)),
        Rule("!has(self.warmupTimeout) || !has(self.duration) || duration(self.warmupTimeout) < duration(self.duration)",
             "warmupTimeout must be shorter than duration",
             lambda load: load.warmup_timeout is not None and load.duration is not None
             and load.warmup_timeout.seconds >= load.duration.seconds),
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
    warmup: Warmup | None = Field(
        None, description="The first part of a profile's load, shown in the report but left out of the verdict and"
        " the breakpoint, so that a cold JVM is not reported as the system's limit. auto (the default for profile"
        " breakpoint): a tenth of the peak rate, in a k6 run of its own before the load, held until the services'"
        " JIT compilation and the p99 have settled (then the load starts at once) or for at most warmupTimeout; the"
        " report says how long it took, or that they did not settle (a breakpoint is then marked as maybe the"
        " JIT's); faults then count from the load's start after it. A duration: a ramp to a tenth of the peak rate"
        " at the start of the load; 0s turns it off.")
    warmup_timeout: Duration | None = Field(
        None, description="The longest an auto warm-up lasts: the JVMs must settle within it. The load after it runs"
        " its whole duration. Default: 2m, at most half the duration.")
    parallelism: int = Field(1, ge=1, le=100, description="Number of k6 runners sharing the load.")
    users: int = Field(10, ge=1, le=100000, description="Synthetic users, one bearer token each; without rate and"
                       " stages of rates (a closed model) also the VUs, each looping over its endpoint.")
    iterations: int | None = Field(None, ge=1, le=10000000, description="A fixed number of iterations the users share"
                                   " (closed model); duration is the longest they may take.")
    vus: Vus | None = Field(None, description="Override the computed k6 VU pool.")

    @property
    def warmup_auto(self) -> bool:
        """A measured warm-up (elves.engine.results.warmup): a light constant load that must settle."""
        return _auto_warmup(self)

    @property
    def warmup_seconds(self) -> float:
        """The warm-up at the start of the load (0: none); for an auto one, its bound."""
        if self.warmup_auto:
            if self.warmup_timeout is not None:
                return self.warmup_timeout.seconds
            return min(DEFAULT_WARMUP_TIMEOUT_SECONDS, self.duration_seconds / 2)
        return self.warmup.seconds if self.warmup is not None else 0.0  # type: ignore[return-value]

    @property
    def measured_seconds(self) -> float:
        """The measured load's planned length: the whole duration, however long an auto warm-up
        before it took (a k6 run of its own: the warm-up never shortens the planned stages).
        Faults count from the measured load's start."""
        return self.duration_seconds

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
