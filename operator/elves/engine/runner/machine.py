"""The phase machine's entry points: step() and abort()."""

from __future__ import annotations

import copy

from collections.abc import Callable

from elves.engine.models.status import LoadTestStatus, Step
from elves.engine.planning.platform import Platform
from elves.engine.results import blips
from elves.engine.results.prometheus import PrometheusError
from elves.engine.results.sql_count import SqlCountError
from elves.engine.runner import analyze, drain, load, prepare, warmup
from elves.engine.runner.context import Clock, Context, Event, HarnessError, StepResult, progress
from elves.engine.runner.outcome import fail, set_outcome_conditions
from elves.engine.runner.tick import Tick

# What each step does: a function of the call's Tick that returns how long to wait before
# the next call (0: go on at once). A final status has no step to take (Step.DONE).
STEPS: dict[Step, Callable[[Tick], float]] = {
    Step.START: prepare.start,
    Step.ACQUIRE: prepare.acquire,
    Step.PREPARE: prepare.prepare,
    Step.WAIT_RESET: prepare.wait_reset,
    Step.APPLY: prepare.apply,
    Step.WAIT_READY: prepare.wait_ready,
    Step.PROMETHEUS: prepare.prometheus,
    Step.BASELINE: prepare.baseline,
    Step.START_WARMUP: warmup.start_warmup,
    Step.WARMUP: warmup.watch_warmup,
    Step.STOP_WARMUP: warmup.stop_warmup,
    Step.START_LOAD: load.start_load,
    Step.LOAD: load.load,
    Step.DRAIN: drain.drain,
    Step.ANALYZE: analyze.analyze,
}


def step(ctx: Context, status: LoadTestStatus, platform: Platform, clock: Clock) -> StepResult:
    """Advance the test as far as it can go without waiting; never blocks, never raises."""
    status = copy.deepcopy(status)
    if status.final:
        return StepResult(status, 0.0)
    now = clock.now()
    # Each step reads the spec afresh (a Pending test may be edited; a running one may not).
    status.observed_generation = getattr(ctx.test.metadata, "generation", status.observed_generation)
    current = Tick(ctx, status, platform, now)
    try:
        delay = 0.0
        # Run the quick transitions of this call back to back; stop at the first wait.
        for _ in range(20):
            delay = STEPS[status.progress.step](current)
            if delay > 0 or status.final:
                break
    except blips.TransientError as exc:  # the step is tried again, until the failure lasts too long
        delay = blips.ride_out(status, exc, now)  # type: ignore[assignment]
        if delay is None:
            fail(ctx, status, platform, now, exc.harness_reason, blips.gave_up(status, now), current.events)
    except HarnessError as exc:
        fail(ctx, status, platform, now, exc.reason, exc.message, current.events)
    except PrometheusError as exc:
        fail(ctx, status, platform, now, "PrometheusUnreachable", str(exc), current.events)
    except SqlCountError as exc:  # the target's persisted count by SQL: a query or login that cannot work
        fail(ctx, status, platform, now, exc.harness_reason, str(exc), current.events)
    except ValueError as exc:  # a plan the spec model let through (e.g. a fault after the staged load)
        fail(ctx, status, platform, now, "InvalidSpec", str(exc), current.events)
    except Exception as exc:  # noqa: BLE001 - a platform failure must end the test, not crash the caller
        fail(ctx, status, platform, now, "PlatformError", f"{type(exc).__name__}: {exc}", current.events)
    else:
        if (passed := blips.recovered(status, now)) is not None:
            current.events.append(progress(passed))
    if not status.final:
        set_outcome_conditions(status, now)
    return StepResult(status, 0.0 if status.final else delay, current.events)


def abort(ctx: Context, status: LoadTestStatus, platform: Platform, clock: Clock,
          reason: str = "the test was interrupted") -> StepResult:
    """Stop now (Ctrl-C, resource deleted): end in Error and restore the system."""
    status = copy.deepcopy(status)
    events: list[Event] = []
    if not status.final:
        fail(ctx, status, platform, clock.now(), "Aborted", reason, events)
    return StepResult(status, 0.0, events)
