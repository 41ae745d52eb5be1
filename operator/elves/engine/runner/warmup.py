"""An auto warm-up (spec.load.warmup: auto) before the load: a k6 run of its own at a light rate,
watched until the services' JIT and the p99 have settled (elves.engine.results.warmup) or its bound, then
stopped; the load starts once its k6 is gone.

It is a run of its own because k6 cannot end a stage early. It carries the run's test id (the
ledger counts every request the test sent, the warm-up's too), its runners the tag part=warmup
(elves.engine.planning.k6.part_tags), and the platform keeps it apart from the load (RunKey.part).
"""

from __future__ import annotations

from elves.engine.models.status import Step, WarmupSettling
from elves.engine.models.units import format_duration
from elves.engine.planning.plan import WarmupPlan
from elves.engine.planning.platform import RunKey
from elves.engine.results import warmup
from elves.engine.runner.context import epoch, progress, utc
from elves.engine.runner.load import k6_not_yet_running, load_run
from elves.engine.runner.tick import Tick


def _plan(tick: Tick) -> WarmupPlan:
    assert tick.plan.warmup is not None, "a warm-up step of a run without an auto warm-up"
    return tick.plan.warmup


def _key(tick: Tick) -> RunKey:
    return RunKey(tick.plan.index, tick.plan.test_id, "warmup")


def start_warmup(tick: Tick) -> float:
    plan = _plan(tick)
    tick.platform.start_load(load_run(tick, "warmup", plan.scenarios, plan.bound_seconds))
    tick.events.append(progress(f"warm-up started for {tick.plan.test_id}: a light load until the services have"
                                f" settled, at most {format_duration(plan.bound_seconds)}"))
    tick.goto("Running", Step.WARMUP)
    return tick.ctx.intervals.running


def watch_warmup(tick: Tick) -> float:
    run, plan = tick.run, _plan(tick)
    load = tick.platform.load_status(_key(tick))
    # An error fails the test as the load's would; starting and setup() have the load's deadlines.
    if (delay := k6_not_yet_running(tick, load, run.warmup_started_at is not None, "the warm-up's ")) is not None:
        return delay
    if run.warmup_started_at is None:  # its clock starts when k6 runs, as the load's does
        run.warmup_started_at = utc(tick.now)
        tick.status.progress.deadline = utc(tick.now + plan.bound_seconds)  # stopped then, settled or not
    started = epoch(run.warmup_started_at)
    hold_start = started + plan.ramp_seconds
    elapsed = tick.now - started
    prom = tick.ctx.prometheus(tick.platform)
    if load.state == "finished":  # its stages last the bound: it ended by itself
        run.warmup_settling = warmup.measure(prom, tick.plan.test_id, started, hold_start, tick.now, plan.bound_seconds)
        _ended(tick)
        return 0.0
    finding = warmup.watch(prom, tick.plan.test_id, started, hold_start, tick.now, plan.bound_seconds)
    if finding is None and elapsed < plan.bound_seconds:
        tick.status.progress.waiting_for = (f"warm-up: the JIT and the p99 settling, {format_duration(elapsed)} of at"
                                            f" most {format_duration(plan.bound_seconds)}")
        return tick.ctx.intervals.warming
    if finding is None:
        finding = warmup.measure(prom, tick.plan.test_id, started, hold_start, tick.now, plan.bound_seconds)
    run.warmup_settling = finding
    tick.platform.stop_load(_key(tick))
    tick.events.append(progress(_stopping_text(finding, elapsed)))
    tick.goto(None, Step.STOP_WARMUP)
    return tick.ctx.intervals.running


def stop_warmup(tick: Tick) -> float:
    """Wait until the warm-up's k6 is gone: the load's samples must begin after its last."""
    load = tick.platform.load_status(_key(tick))
    if load.state not in ("finished", "error"):  # a stopped run may end in either; it is gone
        return tick.wait("the warm-up's k6 stopping", tick.ctx.timeouts.load_stop, "WarmupDidNotStop")
    _ended(tick)
    return 0.0


def _ended(tick: Tick) -> None:
    run = tick.run
    run.warmup_ended_at = utc(tick.now)
    lasted = tick.now - epoch(run.warmup_started_at)  # type: ignore[arg-type]
    if run.warmup_settling is not None:
        run.warmup_settling.lasted_seconds = round(lasted, 3)
    tick.events.append(progress(f"warm-up over after {format_duration(lasted)}; starting the load"))
    tick.goto(None, Step.START_LOAD)


def _stopping_text(finding: WarmupSettling, elapsed: float) -> str:
    if finding.settled:
        return (f"the JVMs settled {format_duration(finding.settled_after_seconds)} into the warm-up: stopping it"
                f" after {format_duration(elapsed)} of at most {format_duration(finding.timeout_seconds)}")
    return f"the warm-up reached its bound of {format_duration(finding.timeout_seconds)} NOT SETTLED: {finding.reason}"

