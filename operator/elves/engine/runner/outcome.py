"""How a test ends: its conditions, the clean-up that restores the system, the end in Error."""

from __future__ import annotations

from elves.engine.models.status import Check, Condition, LoadTestStatus, Step
from elves.engine.models.summary import summarize
from elves.engine.planning.platform import Platform, RunKey
from elves.engine.runner.context import Context, Event, progress, utc, warning


def set_condition(status: LoadTestStatus, type_: str, value: str, reason: str, message: str, now: float) -> None:
    for condition in status.conditions:
        if condition.type == type_:
            if (condition.status, condition.reason, condition.message) != (value, reason, message):
                if condition.status != value:
                    condition.last_transition_time = utc(now)
                condition.status, condition.reason, condition.message = value, reason, message  # type: ignore[assignment]
            condition.observed_generation = status.observed_generation
            return
    status.conditions.append(Condition(type=type_, status=value, reason=reason, message=message,  # type: ignore[arg-type]
                                       last_transition_time=utc(now), observed_generation=status.observed_generation))


def _observed(value: float | None) -> str:
    return "no data" if value is None else f"{value:.4g}"


def _missed_text(checks: list[Check]) -> str:
    """The checks that failed: `name: observed 3, wanted == 0 (detail)`, joined by "; "."""
    return "; ".join(f"{c.name}: observed {_observed(c.observed)}, wanted {c.target}"
                     + (f" ({c.detail})" if c.detail else "") for c in checks if not c.ok)


def set_verdict_conditions(status: LoadTestStatus, now: float) -> None:
    """From the test's verdict: Passed (every objective held, on the load asked for) and
    HarnessLimited (the load generator, not the system, limited the load)."""
    verdict = status.verdict
    assert verdict is not None
    missed, limited = _missed_text(verdict.checks), "; ".join(verdict.limited_by)
    if limited:
        set_condition(status, "Passed", "False", "HarnessLimited",
                      limited + (f"; missed, on k6's figures: {missed}" if missed else ""), now)
        set_condition(status, "HarnessLimited", "True", "GeneratorLimited",
                      f"the load generator, not the system, limited the load: {limited}", now)
        return
    set_condition(status, "Passed", "True" if verdict.passed else "False",
                  "ObjectivesMet" if verdict.passed else "ObjectivesMissed", missed, now)
    set_condition(status, "HarnessLimited", "False", "LoadOffered", "", now)


def set_outcome_conditions(status: LoadTestStatus, now: float) -> None:
    """The Job-like conditions tools wait on: Completed on any end (so `kubectl wait
    --for=condition=Completed` returns whatever the outcome), Failed on Failed, Limited or
    Error, Ready on Succeeded. While the test is under way all three are False, reason the phase."""
    phase = status.phase
    harness = next((c for c in status.conditions if c.type == "HarnessError" and c.status == "True"), None)
    missed = next((c for c in status.conditions if c.type == "Passed" and c.status == "False"), None)
    limited = next((c for c in status.conditions if c.type == "HarnessLimited" and c.status == "True"), None)
    if not status.final:
        for type_ in ("Completed", "Failed", "Ready"):
            set_condition(status, type_, "False", phase, f"the test is {phase.lower()}", now)
        return
    set_condition(status, "Completed", "True", phase, f"the test ended: {phase}", now)
    if phase == "Error" and harness is not None:
        set_condition(status, "Failed", "True", harness.reason, harness.message, now)
    elif phase == "Failed":
        set_condition(status, "Failed", "True", "ObjectivesMissed", missed.message if missed else "", now)
    elif phase == "Limited":
        set_condition(status, "Failed", "True", "HarnessLimited", limited.message if limited else "", now)
    else:
        set_condition(status, "Failed", "False", phase, "", now)
    set_condition(status, "Ready", "True" if phase == "Succeeded" else "False", phase,
                  "every objective held" if phase == "Succeeded" else "", now)


def cleanup(ctx: Context, status: LoadTestStatus, platform: Platform, events: list[Event]) -> None:
    """Stop the load, restore the system, release the lock: best effort, each step on its own."""
    if status.runs and status.phase in ("Running",):
        run = status.runs[status.current_run]
        # During an auto warm-up its own k6 runs, not the load's (runner.warmup).
        part = "warmup" if status.progress.step in (Step.WARMUP, Step.STOP_WARMUP) else "load"
        try:
            platform.stop_load(RunKey(run.index, run.test_id, part))
            events.append(progress(f"stopped k6 for {run.test_id}" + (" (its warm-up)" if part == "warmup" else "")))
        except Exception as exc:  # noqa: BLE001
            events.append(warning("CleanupFailed", f"could not stop k6: {exc}"))
    if status.snapshot is not None and not status.restored:
        try:
            platform.restore_system(status.snapshot)
            status.restored = True
            events.append(progress("restored the system as it was before the test"))
        except Exception as exc:  # noqa: BLE001
            events.append(warning("CleanupFailed", f"could not restore the system: {exc}"))
    if status.started_at is not None:
        try:
            platform.release(ctx.owner)
        except Exception as exc:  # noqa: BLE001
            events.append(warning("CleanupFailed", f"could not release the system: {exc}"))


def fail(ctx: Context, status: LoadTestStatus, platform: Platform, now: float, reason: str, message: str,
         events: list[Event]) -> None:
    """End the test in phase Error with `reason`, cleaning up first."""
    cleanup(ctx, status, platform, events)
    if status.runs:
        run = status.runs[status.current_run]
        run.phase = "Error"
        run.message = message
        run.finished_at = utc(now)
    status.phase = "Error"
    status.finished_at = utc(now)
    status.progress.waiting_for = ""
    status.progress.deadline = None
    set_condition(status, "Running", "False", "Error", "", now)
    set_condition(status, "HarnessError", "True", reason, message, now)
    set_outcome_conditions(status, now)
    status.summary = summarize(status)
    events.append(warning("Error", f"Error ({reason}): {message}"))
