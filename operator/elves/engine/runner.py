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

import copy
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal, Protocol

from elves.engine import promql
from elves.engine.analysis import (
    AnalysisError, RunWindow, analyze, leave_out_warmup, ledger_complete, ledger_result, ledger_since,
)
from elves.engine.credentials import DEFAULT_MAX_SECONDS, lifetime_problem, make_run_credential, run_lifetime
from elves.engine.compare import CompareError, baseline_checks, load_summary
from elves.engine.ledger import LEDGER_TIMEOUT_SECONDS, read_ledger
from elves.engine.models import LoadTest
from elves.engine.plan import RunPlan, plan_runs
from elves.engine.platform import LoadRun, Platform, RunKey
from elves.engine.prometheus import Prometheus, PrometheusError
from elves.engine.scenarios import BUILTIN_SCENARIOS
from elves.engine.status import Check, Condition, FaultEvent, LoadTestStatus, RunResults, RunStatus, Verdict
from elves.engine.summary import summarize
from elves.engine.tokens import load_tokens
from elves.engine.units import format_duration
from elves.engine.verdict import VerdictError, evaluate, find_breakpoint, sweep_table
from elves.constants import GATEWAY_ENDPOINTS


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch."""


class SystemClock:
    def now(self) -> float:
        return time.time()


@dataclass(frozen=True)
class Timeouts:
    """How long each wait may last (seconds) before the test ends in Error."""

    lock: float = 300.0  # another test holds the system
    system_ready: float = 300.0  # replicas up and ready after a reset or a change
    prometheus: float = 60.0  # Prometheus answering
    load_start: float = 60.0  # k6 running after start_load
    load_setup: float = 180.0  # k6's setup() (seeding requests, waiting for their plots)
    # Beyond the planned duration: k6's gracefulStop (30 s), and setup() when the platform
    # cannot tell it apart from the load (see LoadState).
    load_grace: float = 180.0
    run_credential_max: float = DEFAULT_MAX_SECONDS  # the longest a run's credentials may live (engine.credentials)


@dataclass(frozen=True)
class Intervals:
    """How soon to call step() again (seconds)."""

    waiting: float = 1.0
    running: float = 0.5  # faults fire within this of their time
    draining: float = 2.0


@dataclass
class Context:
    """What step() needs besides the status: the test, where its files are, settings."""

    test: LoadTest
    source_dir: Path | None = None  # resolves a custom script's relative path (local mode)
    prometheus_url: str | None = None  # instead of the platform's
    timeouts: Timeouts = field(default_factory=Timeouts)
    intervals: Intervals = field(default_factory=Intervals)
    # Tells two drivers of the same test apart (two `elves run` of one file must not
    # both hold the system); the operator leaves it empty so a restart re-takes its lock.
    driver: str = ""
    http_timeout: float = LEDGER_TIMEOUT_SECONDS  # each read of the registry's ledger

    @property
    def owner(self) -> str:
        meta = self.test.metadata
        key = f"{meta.namespace or 'local'}/{meta.name}"
        return f"{key} ({self.driver})" if self.driver else key

    def plans(self) -> list[RunPlan]:
        return plan_runs(self.test, self.source_dir)

    def prometheus(self, platform: Platform) -> Prometheus:
        return Prometheus(self.prometheus_url or platform.prometheus_url())

    def ledger(self, platform: Platform, test_id: str) -> dict[str, Any]:
        return read_ledger(platform.registry_url(), test_id, platform.service_key(), self.http_timeout)


@dataclass(frozen=True)
class Event:
    """Something that happened, for a log line, a Kubernetes Event or a Grafana annotation.

    Reasons: Phase, Fault, FaultNotFired, DrainTimeout, Succeeded, Failed, Error,
    CleanupFailed, Progress."""

    reason: str
    message: str
    type: Literal["Normal", "Warning"] = "Normal"


def progress(message: str) -> Event:
    return Event("Progress", message)


def warning(reason: str, message: str) -> Event:
    return Event(reason, message, "Warning")


@dataclass
class StepResult:
    status: LoadTestStatus
    delay: float  # call step() again after this many seconds (0 when final)
    events: list[Event] = field(default_factory=list)  # what happened, for a log or kubectl events


def replicas_not_yet_seen_ready(prom: Prometheus) -> list[str]:
    """Deployments whose ready replicas Prometheus still counts below the desired ones (none
    when it has no such series at all: nothing to wait for)."""
    try:
        desired = prom.by_label(promql.replicas_desired(), "deployment")
        ready = prom.by_label(promql.replicas_ready(), "deployment")
    except PrometheusError:
        return []
    return sorted(d for d, want in desired.items() if want is not None and (ready.get(d) or 0) < want)


class HarnessError(Exception):
    """The harness cannot go on: ends the test in phase Error with this reason."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason
        self.message = message


def utc(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=timezone.utc)


def epoch(moment: datetime) -> float:
    return moment.timestamp()


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


def set_outcome_conditions(status: LoadTestStatus, now: float) -> None:
    """The Job-like conditions tools wait on: Completed on any end (so `kubectl wait
    --for=condition=Completed` returns whatever the outcome), Failed on Failed or Error,
    Ready on Succeeded. While the test is under way all three are False, reason the phase."""
    phase = status.phase
    harness = next((c for c in status.conditions if c.type == "HarnessError" and c.status == "True"), None)
    missed = next((c for c in status.conditions if c.type == "Passed" and c.status == "False"), None)
    if not status.final:
        for type_ in ("Completed", "Failed", "Ready"):
            set_condition(status, type_, "False", phase, f"the test is {phase.lower()}", now)
        return
    set_condition(status, "Completed", "True", phase, f"the test ended: {phase}", now)
    if phase == "Error" and harness is not None:
        set_condition(status, "Failed", "True", harness.reason, harness.message, now)
    elif phase == "Failed":
        set_condition(status, "Failed", "True", "ObjectivesMissed", missed.message if missed else "", now)
    else:
        set_condition(status, "Failed", "False", phase, "", now)
    set_condition(status, "Ready", "True" if phase == "Succeeded" else "False", phase,
                  "every objective held" if phase == "Succeeded" else "", now)


class _Step:
    """One call of step(): the status being changed and helpers that need the context."""

    def __init__(self, ctx: Context, status: LoadTestStatus, platform: Platform, now: float):
        self.ctx, self.status, self.platform, self.now = ctx, status, platform, now
        self.events: list[Event] = []
        self.plans = ctx.plans()

    # --- helpers ---------------------------------------------------------------------

    @property
    def run(self) -> RunStatus:
        return self.status.runs[self.status.current_run]

    @property
    def plan(self) -> RunPlan:
        return self.plans[self.status.current_run]

    def goto(self, phase: str | None, step: str) -> None:
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

    # --- phases ----------------------------------------------------------------------

    def advance(self) -> float:
        handler = getattr(self, "_" + self.status.progress.step.replace("-", "_"))
        return handler()

    def _start(self) -> float:
        self.status.started_at = utc(self.now)
        self.status.runs = [RunStatus(index=p.index, test_id=p.test_id, point=p.point.values) for p in self.plans]
        self.status.current_run = 0
        if (too_long := lifetime_problem(self.plans, self.ctx.timeouts)) is not None:
            raise HarnessError("RunTooLong", too_long)  # before the system is taken or changed
        self.status.observed_generation = getattr(self.ctx.test.metadata, "generation", None)
        set_condition(self.status, "Running", "True", "Pending", "waiting for the system", self.now)
        self.goto("Pending", "acquire")
        return 0.0

    def _acquire(self) -> float:
        readiness = self.platform.acquire(self.ctx.owner)
        if not readiness.ready:
            return self.wait(readiness.reason or "another test holds the system", self.ctx.timeouts.lock, "SystemBusy")
        self.events.append(progress(f"took the system for {self.ctx.owner}"))
        self.status.snapshot = self.platform.snapshot_system()
        self._prepare_run()
        return 0.0

    def _prepare_run(self) -> None:
        self.run.started_at = utc(self.now)
        if self.ctx.test.spec.reset:
            self.platform.reset()
            self.events.append(progress("reset: restarting the services with an empty database"))
            self.goto("Preparing", "wait-reset")
        else:
            self.goto("Preparing", "apply")

    def _wait_reset(self) -> float:
        return self._wait_ready("apply")

    def _apply(self) -> float:
        if self.status.current_run > 0 and self.status.snapshot is not None:
            self.platform.restore_system(self.status.snapshot)  # undo the last run's faults first
        system = self.plan.point.system
        if system.changes():
            self.platform.apply_system(system)
            self.events.append(progress(f"system: {system.as_written()}"))
        self.goto(None, "wait-ready")
        return 0.0

    def _wait_ready(self, next_step: str = "prometheus") -> float:
        readiness = self.platform.system_ready()
        if not readiness.ready:
            return self.wait(f"system not ready: {readiness.reason or 'replicas starting'}",
                             self.ctx.timeouts.system_ready, "SystemNotReady")
        self.goto(None, next_step)
        return 0.0

    def _prometheus(self) -> float:
        prom = self.ctx.prometheus(self.platform)
        ready, reason = prom.ready()
        if not ready:
            return self.wait(reason, self.ctx.timeouts.prometheus, "PrometheusUnreachable")
        # The platform says the replicas are ready; Prometheus learns it at its next scrape. Until
        # then its last sample says "0 ready", and the report would show a deployment nobody
        # touched with "ready min 0".
        behind = replicas_not_yet_seen_ready(prom)
        if behind:
            return self.wait(f"Prometheus has not yet seen {', '.join(behind)} ready", self.ctx.timeouts.prometheus,
                             "PrometheusBehind")
        self.goto(None, "baseline")
        return 0.0

    def _baseline(self) -> float:
        try:
            self.run.ledger_baseline = self.ctx.ledger(self.platform, self.plan.test_id)
        except Exception as exc:  # noqa: BLE001 - the registry may still be warming up
            return self.wait(f"the registry's ledger does not answer: {exc}", self.ctx.timeouts.system_ready,
                             "LedgerUnavailable")
        self.goto(None, "start-load")
        return 0.0

    def _start_load(self) -> float:
        plan = self.plan
        lifetime = run_lifetime(plan.duration_seconds, self.ctx.timeouts)  # the run's credentials expire with it
        tokens, admin = load_tokens(self.platform.jwt_secret(), plan.users, lifetime)
        self.platform.start_load(LoadRun(
            index=plan.index, test_id=plan.test_id, script=plan.script, scenarios=plan.scenarios, tokens=tokens,
            admin_token=admin, run_credential=make_run_credential(self.platform.service_key(), plan.test_id, lifetime),
            runner=self.ctx.test.spec.runner,
            parallelism=plan.parallelism, duration_seconds=plan.duration_seconds))
        self.events.append(progress(f"k6 started for {plan.test_id} ({plan.script})"))
        self.goto("Running", "load")
        return self.ctx.intervals.running

    def _load(self) -> float:
        run, plan = self.run, self.plan
        load = self.platform.load_status(RunKey(plan.index, plan.test_id))
        if load.state == "error":
            raise HarnessError("LoadError", f"k6 failed for {plan.test_id}: {load.reason}")
        if load.state == "starting":
            return self.wait("k6 starting", self.ctx.timeouts.load_start, "LoadDidNotStart")
        if load.state == "setup" and run.load_started_at is None:
            if self.status.progress.waiting_for != "k6 running setup()":
                self.status.progress.deadline = None  # a new wait, with its own deadline
            return self.wait("k6 running setup()", self.ctx.timeouts.load_setup, "LoadSetupTooLong",
                             self.ctx.intervals.running)
        if run.load_started_at is None:
            # The load clock starts when k6 runs; faults count from here.
            run.load_started_at = utc(self.now)
            self.status.progress.deadline = utc(self.now + plan.duration_seconds + self.ctx.timeouts.load_grace)
        if load.state in ("running", "setup"):
            self._fire_due_faults()
            self._observe_faults()
            self.status.progress.waiting_for = f"load until {format_duration(plan.duration_seconds)}"
            if self.now > epoch(self.status.progress.deadline):  # type: ignore[arg-type]
                raise HarnessError("LoadOverran", f"k6 still running {format_duration(self.ctx.timeouts.load_grace)}"
                                                  f" after the planned {format_duration(plan.duration_seconds)}; stopped it")
            return self.ctx.intervals.running
        # finished
        run.load_ended_at = utc(self.now)
        self._observe_faults()
        for fault in plan.faults:
            if fault.index not in {f.index for f in run.faults}:
                self.events.append(warning("FaultNotFired",
                                           f"fault {fault.describe()} not fired: the load ended before {fault.at:g}s"))
        self.events.append(progress(f"load finished after {format_duration(self.now - epoch(run.load_started_at))}"))
        self.goto("Draining", "drain")
        return self.ctx.intervals.draining

    def _fire_due_faults(self) -> None:
        run = self.run
        elapsed = self.now - epoch(run.load_started_at)  # type: ignore[arg-type]
        fired = {f.index for f in run.faults}
        for fault in self.plan.faults:
            if fault.index in fired or fault.at > elapsed:
                continue
            try:
                applied = self.platform.apply_fault(fault.action, self.now)
            except Exception as exc:  # noqa: BLE001 - any platform failure ends the test with its words
                raise HarnessError("FaultFailed", f"fault {fault.describe()} at {fault.at:g}s failed: {exc}") from None
            event = FaultEvent(index=fault.index, at=fault.at, fired_at=utc(self.now), action=fault.describe(),
                               label=fault.label(), message=applied.message, watch=applied.watch)
            run.faults.append(event)
            if event.watch is None:
                self._fault_done(event)

    def _observe_faults(self) -> list[str]:
        """Look once at each fault whose effect shows later (a killed container on a cluster);
        what is still awaited."""
        awaited = []
        for event in self.run.faults:
            if event.watch is None:
                continue
            try:
                message = self.platform.observe_fault(event.watch, self.now)
            except Exception as exc:  # noqa: BLE001 - as when applying it
                raise HarnessError("FaultFailed", f"fault {event.action} at {event.at:g}s failed: {exc}") from None
            if message is None:
                awaited.append(f"fault {event.action}: {event.message}")
            else:
                event.message, event.watch = message, None
                self._fault_done(event)
        return awaited

    def _fault_done(self, event: FaultEvent) -> None:
        self.events.append(Event("Fault", f"fault at {event.at:g}s: {event.action}: {event.message}"))

    def _drain(self) -> float:
        run, plan = self.run, self.plan
        prom = self.ctx.prometheus(self.platform)
        load_end = epoch(run.load_ended_at)  # type: ignore[arg-type]
        waiting = self._observe_faults()
        waiting += self._drain_blockers(prom, self._window(end=self.now))
        timeout = self.ctx.test.spec.drain.timeout
        if waiting:
            try:
                return self.wait("draining: " + "; ".join(waiting), timeout.seconds, "DrainTimeout",
                                 self.ctx.intervals.draining)
            except HarnessError:
                # Not converging is the system's failure, not the harness's: analyse what happened.
                self.events.append(warning("DrainTimeout", f"drain timed out after {timeout}: {'; '.join(waiting)}"))
                run.message = f"did not drain within {timeout}: {'; '.join(waiting)}"
                self.goto("Analyzing", "analyze")
                return 0.0
        run.drained_at = utc(self.now)
        self.events.append(progress(f"drained {format_duration(self.now - load_end)} after the load"))
        self.goto("Analyzing", "analyze")
        return 0.0

    def _window(self, end: float) -> RunWindow:
        """The run's time window up to `end`, as the analysis reads it."""
        run = self.run
        load_end = epoch(run.load_ended_at)  # type: ignore[arg-type]
        return RunWindow(self.plan.test_id, epoch(run.load_started_at), load_end, end,  # type: ignore[arg-type]
                         drain_seconds=(end - load_end) if run.drained_at else None,
                         drain_completed=run.drained_at is not None,
                         run_start=epoch(run.started_at) if run.started_at else None)

    def _drain_blockers(self, prom: Prometheus, window: RunWindow) -> list[str]:
        """What still keeps the system from having drained (empty when it has)."""
        blockers, test_id = [], window.test_id
        scraped = prom.value(promql.queue_depth_scraped_at())
        if scraped is None:
            blockers.append("no queue depth samples in Prometheus (is RabbitMQ scraped?)")
        elif scraped <= window.load_end:
            blockers.append("waiting for a queue depth sample taken after the load")
        else:
            depths = {q: v for q, v in prom.by_label(promql.queue_depth(promql.WORK_QUEUES), "queue").items() if v}
            blockers += [f"{queue} holds {value:g}" for queue, value in sorted(depths.items())]
        try:
            raw = ledger_since(self.ctx.ledger(self.platform, test_id), self.run.ledger_baseline)
        except Exception as exc:  # noqa: BLE001 - the registry may be down for a while; keep waiting
            return blockers + [f"ledger unavailable: {exc}"]
        span, at = window.k6_range()
        ok = {e: int(v or 0) for e, v in prom.by_label(promql.k6_requests_ok(test_id, span), "endpoint", at).items()}
        complete, reason = ledger_complete(ledger_result(ok, raw, self._logged_endpoints()))
        if not complete:
            blockers.append(reason)
        return blockers

    def _logged_endpoints(self) -> tuple[str, ...]:
        scenario = BUILTIN_SCENARIOS.get(self.ctx.test.spec.load.scenario or "")
        return scenario.logged_endpoints if scenario else GATEWAY_ENDPOINTS

    def _baseline_checks(self, results: RunResults) -> list[Check]:
        """spec.baseline's thresholds as checks; an unreadable baseline is one failed check
        (a regression gate that cannot look must not pass)."""
        baseline = self.ctx.test.spec.baseline
        assert baseline is not None
        path = Path(baseline.report)
        if not path.is_absolute() and self.ctx.source_dir is not None:
            path = self.ctx.source_dir / path
        try:
            summary = load_summary(path)
        except CompareError as exc:
            return [Check(name="baseline", target=f"readable: {baseline.report}", ok=False, detail=str(exc))]
        return baseline_checks(summary, baseline.report, results, baseline.fail_on)

    def _analyze(self) -> float:
        run, plan, spec = self.run, self.plan, self.ctx.test.spec
        prom = self.ctx.prometheus(self.platform)
        window = self._window(end=epoch(run.drained_at) if run.drained_at else self.now)
        try:
            ledger = ledger_since(self.ctx.ledger(self.platform, plan.test_id), run.ledger_baseline)
        except Exception as exc:  # noqa: BLE001 - analysed without it; the lost_* checks then fail with why
            ledger = None
            self.events.append(progress(f"the registry's ledger is unavailable: {exc}"))
        began = time.monotonic()  # a figure for people (drain end -> verdict), not a deadline
        try:
            results = analyze(prom, window, ledger, self._logged_endpoints())
            if plan.warmup_seconds > 0:
                leave_out_warmup(results, prom, window, plan.warmup_seconds)
            verdict = evaluate(spec.objectives, results, prom, window.end)
            if spec.baseline is not None:
                verdict.checks += self._baseline_checks(results)
                verdict.passed = all(c.ok for c in verdict.checks)
            if spec.load.profile == "breakpoint":
                verdict.breakpoint = find_breakpoint(spec.objectives, prom, plan.test_id, window.load_start,
                                                     window.load_end, plan.profile, plan.warmup_seconds)
        except AnalysisError as exc:
            raise HarnessError("NoLoadData", str(exc)) from None
        except VerdictError as exc:
            raise HarnessError("ObjectiveError", str(exc)) from None
        run.results, run.verdict = results, verdict
        run.finished_at = utc(self.now)
        run.analysis_seconds = round(time.monotonic() - began, 3)
        self.events.append(progress(f"analysis and verdict took {run.analysis_seconds:.2f}s"))
        run.phase = "Succeeded" if verdict.passed else "Failed"
        failed = [c.name for c in verdict.checks if not c.ok]
        self.events.append(progress(f"run {run.index}: {'passed' if verdict.passed else 'failed: ' + ', '.join(failed)}"))
        if self.status.current_run + 1 < len(self.plans):
            self.status.current_run += 1
            self._prepare_run()
            return 0.0
        self._finish()
        return 0.0

    def _finish(self) -> None:
        status = self.status
        runs = status.runs
        checks = []
        for run in runs:
            prefix = f"run {run.index} " if len(runs) > 1 else ""
            for check in (run.verdict.checks if run.verdict else []):
                checks.append(check.model_copy(update={"name": prefix + check.name}))
        passed = all(r.verdict is not None and r.verdict.passed for r in runs)
        last = runs[-1]
        status.verdict = Verdict(passed=passed, checks=checks,
                                 breakpoint=last.verdict.breakpoint if last.verdict else None)
        status.results = last.results
        if len(runs) > 1:
            status.sweep = sweep_table(runs)
        cleanup(self.ctx, status, self.platform, self.events)
        status.phase = "Succeeded" if passed else "Failed"
        status.finished_at = utc(self.now)
        status.progress.step = "done"
        status.progress.waiting_for = ""
        status.progress.deadline = None
        failed = [c for c in checks if not c.ok]
        set_condition(status, "Running", "False", status.phase, "", self.now)
        set_condition(status, "Passed", "True" if passed else "False",
                      "ObjectivesMet" if passed else "ObjectivesMissed",
                      "; ".join(f"{c.name}: observed {_observed(c.observed)}, wanted {c.target}"
                                + (f" ({c.detail})" if c.detail else "") for c in failed),
                      self.now)
        set_outcome_conditions(status, self.now)
        status.summary = summarize(status)
        self.events.append(Event(status.phase, f"{status.phase}: {len(checks) - len(failed)}/{len(checks)} checks passed",
                                 "Normal" if passed else "Warning"))


def _observed(value: float | None) -> str:
    return "no data" if value is None else f"{value:.4g}"


def cleanup(ctx: Context, status: LoadTestStatus, platform: Platform, events: list[Event]) -> None:
    """Stop the load, restore the system, release the lock: best effort, each step on its own."""
    if status.runs and status.phase in ("Running",):
        run = status.runs[status.current_run]
        try:
            platform.stop_load(RunKey(run.index, run.test_id))
            events.append(progress(f"stopped k6 for {run.test_id}"))
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


def step(ctx: Context, status: LoadTestStatus, platform: Platform, clock: Clock) -> StepResult:
    """Advance the test as far as it can go without waiting; never blocks, never raises."""
    status = copy.deepcopy(status)
    if status.final:
        return StepResult(status, 0.0)
    now = clock.now()
    # Each step reads the spec afresh (a Pending test may be edited; a running one may not).
    status.observed_generation = getattr(ctx.test.metadata, "generation", status.observed_generation)
    current = _Step(ctx, status, platform, now)
    try:
        delay = 0.0
        # Run the quick transitions of this call back to back; stop at the first wait.
        for _ in range(20):
            delay = current.advance()
            if delay > 0 or status.final:
                break
    except HarnessError as exc:
        fail(ctx, status, platform, now, exc.reason, exc.message, current.events)
    except PrometheusError as exc:
        fail(ctx, status, platform, now, "PrometheusUnreachable", str(exc), current.events)
    except ValueError as exc:  # a plan the spec model let through (e.g. a fault after the staged load)
        fail(ctx, status, platform, now, "InvalidSpec", str(exc), current.events)
    except Exception as exc:  # noqa: BLE001 - a platform failure must end the test, not crash the caller
        fail(ctx, status, platform, now, "PlatformError", f"{type(exc).__name__}: {exc}", current.events)
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
