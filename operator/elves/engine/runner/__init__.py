"""The phase machine: one non-blocking `step()` that moves a LoadTest towards its verdict.

    Pending -> Preparing -> Running -> Draining -> Analyzing -> (next sweep point: Preparing)
            -> Succeeded | Failed | Error

Each call does a few quick things through the Platform and returns how long to wait
before the next call; all state lives in LoadTestStatus, so the local CLI (a loop) and
the kopf operator (a timer) drive the same lifecycle. Every wait has a deadline and a
reason. Failed means the system missed an objective; Error means the harness could not
run the test, with the reason in a condition. The system is restored to its snapshot at
the end, whatever the end.
"""

from __future__ import annotations

from elves.engine.runner.context import (
    Clock, Context, Event, HarnessError, Intervals, StepResult, SystemClock, Timeouts, epoch, progress, utc, warning,
)
from elves.engine.runner.machine import abort, step
from elves.engine.runner.outcome import cleanup, fail, set_condition, set_outcome_conditions
from elves.engine.runner.prepare import replicas_not_yet_seen_ready

__all__ = ["Clock", "Context", "Event", "HarnessError", "Intervals", "StepResult", "SystemClock", "Timeouts", "abort",
           "cleanup", "epoch", "fail", "progress", "replicas_not_yet_seen_ready", "set_condition",
           "set_outcome_conditions", "step", "utc", "warning"]
