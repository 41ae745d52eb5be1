"""The load: k6 started, watched to its end, the faults fired on time."""

from __future__ import annotations

from typing import Any

from elves.engine.models.status import FaultEvent, Step
from elves.engine.models.units import format_duration
from elves.engine.planning.credentials import make_run_credential, run_lifetime
from elves.engine.planning.platform import LoadPart, LoadRun, LoadStatus, RunKey
from elves.engine.planning.tokens import load_tokens
from elves.engine.results import blips
from elves.engine.runner.context import Event, HarnessError, epoch, progress, utc, warning
from elves.engine.runner.tick import Tick


def load_run(tick: Tick, part: LoadPart, scenarios: dict[str, Any], duration: float) -> LoadRun:
    """One k6 run of the current run's plan: the load, or its auto warm-up."""
    plan = tick.plan
    lifetime = run_lifetime(duration, tick.ctx.timeouts)  # the run's credentials expire with it
    # Least power: Elves' gateway tokens and registry credential only for a test of Elves' own
    # system; another system's runners (its author's script) need and get neither.
    tokens, admin, credential = [], "", ""
    if tick.ctx.target.own:
        tokens, admin = load_tokens(tick.platform.jwt_secret(), plan.users, lifetime, plan.test_id)
        credential = make_run_credential(tick.platform.service_key(), plan.test_id, lifetime)
    return LoadRun(index=plan.index, test_id=plan.test_id, script=plan.script, scenarios=scenarios, tokens=tokens,
                   admin_token=admin, run_credential=credential, runner=tick.ctx.test.spec.runner,
                   parallelism=plan.parallelism, duration_seconds=duration, part=part)


def start_load(tick: Tick) -> float:
    plan = tick.plan
    tick.platform.start_load(load_run(tick, "load", plan.scenarios, plan.duration_seconds))
    tick.events.append(progress(f"k6 started for {plan.test_id} ({plan.script})"))
    tick.goto("Running", Step.LOAD)
    return tick.ctx.intervals.running


def k6_not_yet_running(tick: Tick, load: LoadStatus, started: bool, what: str = "") -> float | None:
    """How long to wait while `what` k6 run ("" the load's, "the warm-up's ") errs, starts or
    runs setup() (before its clock `started`); None once it runs or has ended."""
    if load.state == "error":
        raise HarnessError("LoadError", f"k6 failed {'in the warm-up ' if what else ''}for {tick.plan.test_id}:"
                                        f" {load.reason}")
    if load.state == "starting":
        return tick.wait(f"{what}k6 starting", tick.ctx.timeouts.load_start, "LoadDidNotStart")
    if load.state == "setup" and not started:
        if tick.status.progress.waiting_for != f"{what}k6 running setup()":
            tick.status.progress.deadline = None  # a new wait, with its own deadline
        return tick.wait(f"{what}k6 running setup()", tick.ctx.timeouts.load_setup, "LoadSetupTooLong",
                         tick.ctx.intervals.running)
    return None


def load(tick: Tick) -> float:
    run, plan = tick.run, tick.plan
    load = tick.platform.load_status(RunKey(plan.index, plan.test_id))
    if (delay := k6_not_yet_running(tick, load, run.load_started_at is not None)) is not None:
        return delay
    if run.load_started_at is None:
        # The load clock starts when k6 runs; faults count from here.
        run.load_started_at = utc(tick.now)
        tick.status.progress.deadline = utc(tick.now + plan.duration_seconds + tick.ctx.timeouts.load_grace)
    if load.state in ("running", "setup"):
        _fire_due_faults(tick)
        observe_faults(tick)
        tick.status.progress.waiting_for = f"load until {format_duration(plan.duration_seconds)}"
        if tick.now > epoch(tick.status.progress.deadline):  # type: ignore[arg-type]
            raise HarnessError("LoadOverran", f"k6 still running {format_duration(tick.ctx.timeouts.load_grace)}"
                                              f" after the planned {format_duration(plan.duration_seconds)}; stopped it")
        return tick.ctx.intervals.running
    # finished
    run.load_ended_at = utc(tick.now)
    observe_faults(tick)
    for fault in plan.faults:
        if fault.index not in {f.index for f in run.faults}:
            tick.events.append(warning("FaultNotFired",
                                       f"fault {fault.describe()} not fired: the load ended before {fault.at:g}s"))
    tick.events.append(progress(f"load finished after {format_duration(tick.now - epoch(run.load_started_at))}"))
    tick.goto("Draining", Step.DRAIN)
    return tick.ctx.intervals.draining


def _fire_due_faults(tick: Tick) -> None:
    """Apply each fault that is due, once per run: a fault is in the run's record from the moment it
    is tried, so no later step applies it again. A try cut by a blip is made again on the next step
    only for an action that is the same done twice (repeatable: scale, resources); a kill, a
    restart, a pause or an infrastructure restart whose try was cut may have happened, so it is
    kept with that said, never sent a second time."""
    run = tick.run
    elapsed = tick.now - epoch(run.load_started_at)  # type: ignore[arg-type]
    fired = {f.index for f in run.faults}
    for fault in tick.plan.faults:
        if fault.index in fired or fault.at > elapsed:
            continue
        event = FaultEvent(index=fault.index, at=fault.at, fired_at=utc(tick.now), action=fault.describe(),
                           label=fault.label(), message="being applied")
        run.faults.append(event)
        try:
            applied = tick.platform.apply_fault(fault.action, tick.now)
        except blips.TransientError as exc:
            if fault.action.repeatable:
                run.faults.remove(event)
                raise  # tried again on the next step: applying it twice is applying it once
            event.message = (f"may or may not have taken effect ({exc}); not applied again, as a "
                             f"{fault.action.kind} fault fires at most once per run")
            tick.events.append(warning("FaultUncertain", f"fault {fault.describe()} at {fault.at:g}s: {event.message}"))
            continue
        except Exception as exc:  # noqa: BLE001 - any platform failure ends the test with its words
            event.message = f"failed: {exc}"
            raise HarnessError("FaultFailed", f"fault {fault.describe()} at {fault.at:g}s failed: {exc}") from None
        event.message, event.watch = applied.message, applied.watch
        if event.watch is None:
            _fault_done(tick, event)


def observe_faults(tick: Tick) -> list[str]:
    """Look once at each fault whose effect shows later (a killed container on a cluster);
    what is still awaited."""
    awaited = []
    for event in tick.run.faults:
        if event.watch is None:
            continue
        try:
            message = tick.platform.observe_fault(event.watch, tick.now)
        except blips.TransientError:
            raise
        except Exception as exc:  # noqa: BLE001 - as when applying it
            raise HarnessError("FaultFailed", f"fault {event.action} at {event.at:g}s failed: {exc}") from None
        if message is None:
            awaited.append(f"fault {event.action}: {event.message}")
        else:
            event.message, event.watch = message, None
            _fault_done(tick, event)
    return awaited


def _fault_done(tick: Tick, event: FaultEvent) -> None:
    tick.events.append(Event("Fault", f"fault at {event.at:g}s: {event.action}: {event.message}"))
