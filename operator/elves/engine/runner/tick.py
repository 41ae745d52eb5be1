"""One call of step(): the status being changed and the helpers every phase uses."""

from __future__ import annotations

from elves.engine.models.status import LoadTestStatus, RunStatus, Step
from elves.engine.models.units import format_duration
from elves.engine.planning.plan import RunPlan
from elves.engine.planning.platform import Platform
from elves.engine.runner.context import Context, Event, HarnessError, epoch, utc
from elves.engine.runner.outcome import set_condition


class Tick:
    """One call of step(): the status being changed and helpers that need the context."""

    def __init__(self, ctx: Context, status: LoadTestStatus, platform: Platform, now: float):
        self.ctx, self.status, self.platform, self.now = ctx, status, platform, now
        self.events: list[Event] = []
        self.plans = ctx.plans

    @property
    def run(self) -> RunStatus:
        return self.status.runs[self.status.current_run]

    @property
    def plan(self) -> RunPlan:
        return self.plans[self.status.current_run]

    def goto(self, phase: str | None, step: Step) -> None:
        if phase is not None and phase != self.status.phase:
            self.status.phase = phase  # type: ignore[assignment]
            self.run.phase = phase  # type: ignore[assignment]
            self.events.append(Event("Phase", f"run {self.run.index}: {phase}"))
            set_condition(self.status, "Running", "True", phase, f"run {self.run.index + 1} of {len(self.plans)}",
                          self.now)
        self.status.progress.step = step
        self.status.progress.waiting_for = ""
        self.status.progress.since = utc(self.now)
        self.status.progress.deadline = None

    def wait(self, reason: str, timeout: float, error_reason: str, interval: float | None = None) -> float:
        """Keep waiting for `reason` until `timeout` after the wait began, then HarnessError."""
        progress = self.status.progress
        if progress.deadline is None:
            progress.deadline = utc(self.now + timeout)
        progress.waiting_for = reason
        if self.now > epoch(progress.deadline):
            raise HarnessError(error_reason, f"gave up after {format_duration(timeout)}: {reason}")
        return interval if interval is not None else self.ctx.intervals.waiting
