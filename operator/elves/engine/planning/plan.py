"""Planning: from a LoadTest to runs, k6 scenarios, rate profiles and the fault schedule.

Pure functions of the spec; nothing here talks to a system.

The load is an open model: k6 starts iterations at the planned arrival rate whatever the
system does, so queueing shows up as latency and queue depth instead of being hidden by
slower clients. k6 only drops an iteration when it has no free VU, so the VU pool is
sized from the rate and the expected iteration time with room for stalls
(elves.engine.models.scenarios.vus_for, the rule the scripts' standalone runs use too): an honest
run drops nothing, and `dropped_iterations > 0` means the harness, not the system, fell short.
"""

from __future__ import annotations

import itertools
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elves.constants import LOCAL_TEST_NAMESPACE
from elves.engine.models.faults import FaultAction
from elves.engine.models.load import Load
from elves.engine.models.loadtest import LoadTest
from elves.engine.models.scenarios import BUILTIN_SCENARIOS, CUSTOM_ITERATION_SECONDS, FLAT_RATE_EXECUTOR, time_unit, vus_for
from elves.engine.models.spec import LoadTestSpec, point_documents, sweep_combinations
from elves.engine.models.system import System
from elves.engine.models.units import k6_duration
from elves.engine.planning.platform import RunScript, ScriptConfigMap, ScriptFile


@dataclass(frozen=True)
class Segment:
    """A piece of the total arrival-rate profile: linear from `start_rate` to `end_rate`."""

    start: float  # seconds since the load started
    end: float
    start_rate: float  # per second
    end_rate: float


@dataclass(frozen=True)
class PlannedFault:
    index: int  # position in spec.faults
    at: float  # seconds since the load started
    action: FaultAction  # what Platform.apply_fault does: ScaleFault, KillPodFault, ...

    def describe(self) -> str:
        return self.action.describe()

    def label(self) -> str:
        return self.action.label()


@dataclass(frozen=True)
class SweepPoint:
    index: int
    values: dict[str, Any]  # sweep path -> value ({} without a sweep)
    system: System  # spec.system with the values applied
    load: Load  # spec.load with the values applied (load.rate, load.users)


@dataclass(frozen=True)
class WarmupPlan:
    """An auto warm-up's own k6 run: a brief ramp to a light rate, then that rate held for at
    most `bound_seconds` (spec.load.warmupTimeout); the runner stops it once settled."""

    scenarios: dict[str, Any]
    bound_seconds: float
    ramp_seconds: float  # its way up to the constant rate: whether it settled is read after it


@dataclass(frozen=True)
class RunPlan:
    """Everything one run needs: the platform calls are made from this."""

    index: int
    test_id: str
    point: SweepPoint
    script: RunScript
    scenarios: dict[str, Any]
    faults: list[PlannedFault]
    duration_seconds: float
    parallelism: int
    users: int
    rate_profile: list[Segment] = field(default_factory=list)  # the rate over time (spec.load.profile or stages)
    warmup_seconds: float = 0.0  # a warm-up ramp within the load, left out of the verdict and the breakpoint
    # An auto warm-up (spec.load.warmup: auto): a k6 run of its own before the load, stopped once
    # the services settled (runner.warmup); the load's scenarios, rate profile and duration then are
    # only the measured part after it.
    warmup: WarmupPlan | None = None

    @property
    def warmup_auto(self) -> bool:
        """The warm-up is measured: did the JVMs settle in it? (engine.results.warmup)"""
        return self.warmup is not None


def test_id(namespace: str | None, name: str, run: int) -> str:
    """`<namespace>/<name>/<run>`: the key of one run's traffic in every row and metric."""
    return f"{namespace or LOCAL_TEST_NAMESPACE}/{name}/{run}"


# --- sweeps -------------------------------------------------------------------------

def expand_sweep(spec: LoadTestSpec) -> list[SweepPoint]:
    """One point per value of a one-key sweep; the grid (first key outermost) for two or three keys."""
    points = []
    for index, values in enumerate(sweep_combinations(spec.sweep)):
        system, load = point_documents(spec.system, spec.load, values)
        points.append(SweepPoint(index, values, System.model_validate(system), Load.model_validate(load)))
    return points


def numeric(value: Any) -> float | None:
    """A sweep value as a number, for efficiency ratios: 3 -> 3, "2Gi" -> bytes, "500m" -> 0.5,
    "120/min" -> 2 (per second)."""
    from elves.engine.models.units import parse_cpu, parse_memory, parse_rate

    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    for parse in (float, parse_memory, parse_cpu, parse_rate):
        try:
            return float(parse(value))
        except (TypeError, ValueError):
            continue
    return None


# --- rate profiles ------------------------------------------------------------------

# (fraction of the duration, fraction of the peak rate reached at its end), from 0 at t=0.
_PROFILE_SHAPES: dict[str, list[tuple[float, float]]] = {
    # The study's load profile: warm-up ramp, light plateau, steeper ramp, plateau, ramp-down.
    "warmup": [(0.10, 0.25), (0.15, 0.25), (0.15, 1.0), (0.50, 1.0), (0.10, 0.0)],
    # Two spikes to the peak with a drop to a fifth of it between and after them.
    "spike": [(0.05, 0.2), (0.15, 0.2), (0.05, 1.0), (0.15, 1.0), (0.05, 0.2),
              (0.15, 0.2), (0.05, 1.0), (0.15, 1.0), (0.05, 0.2), (0.15, 0.2)],
    # A linear ramp from 0 to the peak over the whole duration: where does it break?
    "breakpoint": [(1.0, 1.0)],
}
ENDURANCE_RAMP_SECONDS = 60.0
# Of the peak rate, reached at the end of a warm-up: light enough that a cold JVM's slow
# answers do not pile up into a queue, enough that the hot paths reach the JIT's thresholds.
WARMUP_FRACTION = 0.1
AUTO_WARMUP_RAMP_SECONDS = 10.0  # an auto warm-up's way up to its rate, before it holds it


def profile_stages(profile: str, peak_per_second: float, duration: float) -> list[tuple[float, float]]:
    """A profile as (stage seconds, target per second) stages that add up to `duration`."""
    if profile == "endurance":
        ramp = min(ENDURANCE_RAMP_SECONDS, duration * 0.05)
        shape = [(ramp / duration, 1.0), (1 - ramp / duration, 1.0)]
    elif profile in _PROFILE_SHAPES:
        shape = _PROFILE_SHAPES[profile]
    else:
        raise ValueError(f"unknown profile {profile!r}")
    # Round the boundaries (not each stage) to milliseconds so the stages add up exactly.
    boundaries = [round(duration * f, 3) for f in itertools.accumulate(s for s, _ in shape)]
    boundaries[-1] = round(duration, 3)
    starts = [0.0] + boundaries[:-1]
    return [(round(end - start, 3), peak_per_second * target)
            for (start, end), (_, target) in zip(zip(starts, boundaries), shape)]


def warmup_stages(rate: float, seconds: float, auto: bool) -> list[tuple[float, float]]:
    """The warm-up: a ramp to `rate` over its whole length; an auto one ramps briefly and then
    holds the rate, because whether the latency has settled (elves.engine.results.warmup) can only be
    read from a load that does not change.

    An auto warm-up is a k6 run of its own (WarmupPlan; on a cluster a second TestRun with its
    Secret and script), because k6 cannot end a stage early: the runner stops it once the JIT
    and the p99 have settled, or at its bound, and then starts the measured load (runner.warmup).
    A fixed one is the first stage of the load's own k6 run."""
    if not auto:
        return [(round(seconds, 3), rate)]
    ramp = round(min(AUTO_WARMUP_RAMP_SECONDS, seconds / 4), 3)
    return [(ramp, rate), (round(seconds - ramp, 3), rate)]


def total_stages(load: Load) -> list[tuple[float, float]] | None:
    """The total-rate stages of the load (profile or spec stages), held to its measured length
    (the duration, less an auto warm-up's bound); None for a flat rate."""
    duration = load.duration_seconds
    if load.profile is not None:
        assert load.rate is not None  # the model requires it
        warmup = load.warmup_seconds
        if warmup <= 0 or load.warmup_auto:  # an auto warm-up runs before the load, in a k6 run of its own
            return profile_stages(load.profile, load.rate.per_second, load.measured_seconds)
        return [*warmup_stages(load.rate.per_second * WARMUP_FRACTION, warmup, auto=False),
                *profile_stages(load.profile, load.rate.per_second, round(duration - warmup, 3))]
    if load.stages is None or load.closed:
        return None
    stages = [(s.duration.seconds, s.target.per_second) for s in load.stages]
    covered = sum(d for d, _ in stages)
    if duration - covered > 1e-6:
        stages.append((round(duration - covered, 3), stages[-1][1]))  # hold the last target
    return stages


def rate_profile(load: Load) -> list[Segment]:
    """The planned total arrival rate over time, as linear segments."""
    stages = total_stages(load)
    if stages is None:
        rate = load.rate.per_second if load.rate else 0.0
        return [Segment(0.0, load.duration_seconds, rate, rate)]
    segments, start, rate = [], 0.0, 0.0
    for seconds, target in stages:
        segments.append(Segment(start, start + seconds, rate, target))
        start, rate = start + seconds, target
    return segments


def planned_iterations(load: Load) -> float | None:
    """The iterations a load asks for: a closed model's fixed number, else the planned arrival
    rate over time integrated; None for users who loop for a time (no number is planned)."""
    if load.closed:
        return float(load.iterations) if load.iterations else None
    return sum((s.start_rate + s.end_rate) / 2 * (s.end - s.start) for s in rate_profile(load))


def rate_at(segments: list[Segment], t: float) -> float:
    """The planned total arrival rate (per second) `t` seconds into the load."""
    for s in segments:
        if s.start <= t <= s.end:
            span = s.end - s.start
            return s.end_rate if span == 0 else s.start_rate + (s.end_rate - s.start_rate) * (t - s.start) / span
    return 0.0


def peak_rate(load: Load) -> float:
    """The highest total arrival rate the plan reaches (per second)."""
    segments = rate_profile(load)
    candidates = [seg.end_rate for seg in segments] + [seg.start_rate for seg in segments]
    if load.rate is not None:
        candidates.append(load.rate.per_second)
    return max(candidates, default=0.0)


# --- k6 scenarios -------------------------------------------------------------------

def share_out(total: int, mix: dict[str, float]) -> dict[str, int]:
    """`total` (users, iterations) shared by weight in whole numbers that add up to it
    (largest remainders first, ties in mix order)."""
    weight = sum(mix.values()) or 1.0
    exact = {k: total * w / weight for k, w in mix.items()}
    shares = {k: math.floor(v) for k, v in exact.items()}
    for key in sorted(exact, key=lambda k: shares[k] - exact[k])[:total - sum(shares.values())]:
        shares[key] += 1
    return shares


def closed_scenarios(load: Load, test_id_value: str = "") -> dict[str, Any]:
    """The k6 `scenarios` of a closed model: the users (VUs) shared over the mix by weight, each
    looping over its endpoint for the duration; a fixed number of iterations shared the same
    way (`shared-iterations`, duration as the limit); or a linear ramp of users (stages of users)."""
    mix = load.effective_mix
    users = share_out(load.users, mix)
    iterations = share_out(load.iterations, mix) if load.iterations else {}
    stages = [(s.duration.seconds, share_out(s.users or 0, mix)) for s in load.stages or []]
    scenarios: dict[str, Any] = {}
    for name in mix:
        if stages:
            scenario: dict[str, Any] = {"executor": "ramping-vus", "startVUs": 0, "stages": [
                {"duration": k6_duration(seconds), "target": shares[name]} for seconds, shares in stages]}
        elif iterations:
            scenario = {"executor": "shared-iterations", "vus": max(1, min(users[name], iterations[name])),
                        "iterations": iterations[name], "maxDuration": k6_duration(load.duration_seconds)}
        else:
            scenario = {"executor": "constant-vus", "vus": users[name], "duration": k6_duration(load.duration_seconds)}
        if not (stages or scenario.get("iterations", scenario.get("vus"))):
            continue  # a weight too small for a whole user or iteration
        scenario["exec"] = name
        if test_id_value:
            scenario["tags"] = {"testid": test_id_value}
        scenarios[name] = scenario
    return scenarios


def k6_scenarios(load: Load, test_id_value: str = "",
                 stages_of: list[tuple[float, float]] | None = None) -> dict[str, Any]:
    """The k6 `scenarios` option: one scenario per endpoint of the mix, `exec` = its name;
    arrival-rate scenarios (open model) unless the load is a closed one. `stages_of`: total-rate
    stages instead of the load's own (an auto warm-up's, sized for its own peak)."""
    if load.closed:
        return closed_scenarios(load, test_id_value)
    mix = load.effective_mix
    total_weight = sum(mix.values())
    builtin = BUILTIN_SCENARIOS.get(load.scenario or "")
    stages = total_stages(load) if stages_of is None else stages_of
    duration = load.duration_seconds
    peak = peak_rate(load) if stages_of is None else max((target for _, target in stages_of), default=0.0)

    scenarios: dict[str, Any] = {}
    for name, weight in mix.items():
        share = weight / total_weight
        unit_name, unit_seconds = time_unit(peak * share)
        pre, max_vus = vus_for(peak * share, builtin.seconds_of(name) if builtin else CUSTOM_ITERATION_SECONDS)
        if load.vus is not None:
            pre = max(1, math.ceil(load.vus.pre_allocated * share))
            max_vus = max(pre, math.ceil((load.vus.max or load.vus.pre_allocated) * share))
        scenario: dict[str, Any] = {"exec": name, "timeUnit": unit_name, "preAllocatedVUs": pre, "maxVUs": max_vus}
        if stages is None:
            rate = (load.rate.per_second if load.rate else 0.0) * share
            scenario.update(executor=FLAT_RATE_EXECUTOR, rate=round(rate * unit_seconds),
                            duration=k6_duration(duration))
        else:
            scenario.update(executor="ramping-arrival-rate", startRate=0, stages=[
                {"duration": k6_duration(seconds), "target": round(target * share * unit_seconds)}
                for seconds, target in stages
            ])
        if test_id_value:
            scenario["tags"] = {"testid": test_id_value}
        scenarios[name] = scenario
    return scenarios


def vu_ceiling(scenarios: dict[str, Any]) -> int | None:
    """The most VUs an open model's scenarios let k6 bring up (their maxVUs together, over every
    runner: execution segments split them). None when reaching it says nothing: a closed model,
    whose VUs are its load, or a pool that cannot grow (k6 starts the pre-allocated VUs at once,
    so a pool whose maxVUs are its preAllocatedVUs is at its ceiling from the first second)."""
    ceilings = [scenario.get("maxVUs") for scenario in scenarios.values()]
    if not ceilings or None in ceilings:
        return None
    if all(scenario["maxVUs"] <= scenario.get("preAllocatedVUs", 0) for scenario in scenarios.values()):
        return None
    return sum(ceilings)


# --- faults -------------------------------------------------------------------------

def fault_schedule(spec: LoadTestSpec) -> list[PlannedFault]:
    """The faults in firing order (by time, then as written); ValueError when one falls after the
    load. After an auto warm-up they count from the measured load's start (Load.measured_seconds)."""
    end = spec.load.measured_seconds
    planned = []
    for index, fault in enumerate(spec.faults):
        if fault.at.seconds >= end:
            raise ValueError(f"spec.faults[{index}].at = {fault.at} is not before the end of the load ({end:g}s"
                             + (", after the auto warm-up" if spec.load.warmup_auto else "") + ")")
        planned.append(PlannedFault(index, fault.at.seconds, fault.action))
    return sorted(planned, key=lambda f: (f.at, f.index))


# --- runs ---------------------------------------------------------------------------

def scenarios_dir() -> Path:
    """Where the built-in k6 scenarios live (the repository's loadtests/scenarios)."""
    override = os.environ.get("ELVES_SCENARIOS_DIR")
    return Path(override) if override else Path(__file__).resolve().parents[4] / "loadtests" / "scenarios"


def script_location(load: Load, source_dir: Path | None = None) -> RunScript:
    """What the platform runs: a file (a built-in scenario, a script path), or a ConfigMap on a cluster."""
    if load.scenario is not None:
        return ScriptFile(str(scenarios_dir() / f"{load.scenario}.js"))
    assert load.script is not None  # the model requires one of them
    if load.script.config_map is not None:
        return ScriptConfigMap(load.script.config_map.name, load.script.config_map.file)
    path = Path(load.script.path or "")
    if not path.is_absolute() and source_dir is not None:
        path = source_dir / path
    return ScriptFile(str(path))


def plan_runs(test: LoadTest, source_dir: Path | None = None) -> list[RunPlan]:
    """One plan per sweep point, in order."""
    spec = test.spec
    faults = fault_schedule(spec)
    script = script_location(spec.load, source_dir)
    plans = []
    for point in expand_sweep(spec):
        run_id = test_id(test.metadata.namespace, test.name, point.index)
        plans.append(RunPlan(
            index=point.index,
            test_id=run_id,
            point=point,
            script=script,
            scenarios=k6_scenarios(point.load, run_id),
            faults=faults,
            duration_seconds=point.load.measured_seconds,
            parallelism=point.load.parallelism,
            users=point.load.users,
            rate_profile=rate_profile(point.load),
            warmup_seconds=0.0 if point.load.warmup_auto else point.load.warmup_seconds,
            warmup=warmup_plan(point.load, run_id),
        ))
    return plans


def warmup_plan(load: Load, test_id_value: str) -> WarmupPlan | None:
    """The auto warm-up's own k6 run (None without one): a tenth of the peak rate, held for at
    most its bound."""
    if not load.warmup_auto or load.warmup_seconds <= 0:
        return None
    assert load.rate is not None  # a warm-up needs a profile, a profile needs rate
    stages = warmup_stages(load.rate.per_second * WARMUP_FRACTION, load.warmup_seconds, auto=True)
    return WarmupPlan(scenarios=k6_scenarios(load, test_id_value, stages_of=stages),
                      bound_seconds=load.warmup_seconds, ramp_seconds=stages[0][0])
