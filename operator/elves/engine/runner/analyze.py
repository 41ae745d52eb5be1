"""The analysis of a run, its verdict, the next sweep point or the end of the test."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from elves.engine.models.status import Check, GeneratorCpu, Ledger, RunResults, RunStatus, Step, Verdict
from elves.engine.models.summary import summarize
from elves.engine.planning.plan import planned_iterations, vu_ceiling
from elves.engine.planning.platform import RunKey
from elves.engine.results import analysis
from elves.engine.results.analysis import AnalysisError, RunWindow, leave_out_warmup
from elves.engine.results.compare import CompareError, baseline_checks, load_summary
from elves.engine.results.compare.history import find_baseline, wanted
from elves.engine.results.compare.plans import plan_record
from elves.engine.results.drop_blame import first_drop
from elves.engine.results.generator_limit import busiest
from elves.engine.results.ledger import LedgerUnavailable, ledger_since
from elves.engine.results.prometheus import Prometheus
from elves.engine.results.report import loadtest_document
from elves.engine.results.verdict import VerdictError, evaluate, find_breakpoint, phase_of, sweep_table, verdict_of
from elves.engine.runner.context import Event, HarnessError, epoch, progress, utc
from elves.engine.runner.drain import logged_endpoints, run_window, target_counts
from elves.engine.runner.outcome import cleanup, set_condition, set_outcome_conditions, set_verdict_conditions
from elves.engine.runner.prepare import prepare_run
from elves.engine.runner.tick import Tick


def _baseline_checks(tick: Tick, results: RunResults) -> list[Check]:
    """spec.baseline's thresholds as checks; a baseline that cannot be read or found is one
    failed check (a regression gate that cannot look must not pass)."""
    baseline, ctx = tick.ctx.test.spec.baseline, tick.ctx
    assert baseline is not None
    try:
        if baseline.report is not None:
            target = f"readable: {baseline.report}"
            path = Path(baseline.report)
            if not path.is_absolute() and ctx.source_dir is not None:
                path = ctx.source_dir / path
            name, summary = baseline.report, load_summary(path)
        else:
            assert baseline.load_test is not None
            target = wanted(baseline.load_test, ctx.namespace, baseline.chosen_pick)
            if ctx.reports is None:
                raise CompareError(f"{tick.platform.name} keeps no report history to look in")
            name, summary = find_baseline(ctx.reports, ctx.namespace, baseline.load_test, baseline.chosen_pick)
    except CompareError as exc:
        return [Check(name="baseline", target=target, ok=False, detail=str(exc))]
    # This run's plan as its own summary will record it: a baseline of another plan is refused.
    this = {"loadtest": loadtest_document(ctx.test), "plan": plan_record(tick.platform.name, tick.status.script)}
    try:
        return baseline_checks(summary, name, results, baseline.fail_on, plan=this)
    except CompareError as exc:
        return [Check(name="baseline", target=f"a readable baseline: {name}", ok=False, detail=str(exc))]


def _generator_cpu(tick: Tick, window: RunWindow) -> GeneratorCpu | None:
    """The busiest k6 runner's CPU over the load, as the platform measured it (None: unknown)."""
    try:
        runners = tick.platform.generator_cpu(RunKey(tick.plan.index, tick.plan.test_id), window.load_start,
                                              window.load_end)
    except Exception as exc:  # noqa: BLE001 - judged without it; the report says it is unknown
        tick.events.append(progress(f"the load generator's CPU is unknown: {exc}"))
        return None
    return busiest(runners)


def _ledger(tick: Tick, prom: Prometheus, window: RunWindow) -> dict[str, Any] | Ledger | None:
    """The run's ledger: the target's counts (from Prometheus or its database: one that cannot be
    read ends the test in Error, naming the field), or the registry's raw ledger (None when it
    cannot be read: the lost_* checks then fail saying so)."""
    if tick.ctx.target.counts_its_ledger:
        return target_counts(tick, prom, window)
    try:
        return ledger_since(tick.ctx.ledger(tick.platform, tick.plan.test_id), tick.run.ledger_baseline)
    except LedgerUnavailable:
        raise  # a registry that cannot answer now (a replica or its database restarting): waited out
    except Exception as exc:  # noqa: BLE001 - analysed without it; the lost_* checks then fail with why
        tick.events.append(progress(f"the registry's ledger is unavailable: {exc}"))
        return None


def analyze(tick: Tick) -> float:
    run, plan, spec = tick.run, tick.plan, tick.ctx.test.spec
    prom = tick.ctx.prometheus(tick.platform)
    window = run_window(tick, end=epoch(run.drained_at) if run.drained_at else tick.now)
    ledger = _ledger(tick, prom, window)
    began = time.monotonic()  # a figure for people (drain end -> verdict), not a deadline
    try:
        # Another system's workloads as the platform found them before the test: those its
        # selectors chose too (none in the snapshot: those it lists by name).
        snapshot = tick.status.snapshot
        workloads = {name: w.kind for name, w in snapshot.workloads.items()} if snapshot else None
        results = analysis.analyze(prom, window, ledger, logged_endpoints(tick), plan.point.system.autoscaling,
                                   tick.ctx.target, workloads)
        results.vus_ceiling = vu_ceiling(plan.scenarios)
        results.planned_iterations = planned_iterations(plan.point.load)
        results.generator_cpu = _generator_cpu(tick, window)
        if results.dropped_iterations:
            results.first_drop = first_drop(prom, spec.objectives, plan.test_id, window.load_start, window.load_end)
        if plan.warmup_seconds > 0 or window.warmup() is not None:
            leave_out_warmup(results, prom, window, plan.warmup_seconds)
        # An auto warm-up was judged while it ran (runner.warmup): the finding that stopped it.
        results.warmup_settling = run.warmup_settling
        verdict = evaluate(spec.objectives, results, prom, window.end, drops_judged=spec.judges_drops)
        if spec.baseline is not None:
            verdict = verdict_of(verdict.checks + _baseline_checks(tick, results), verdict.limited_by)
        if spec.load.profile == "breakpoint":
            verdict.breakpoint = find_breakpoint(spec.objectives, prom, plan.test_id, window.load_start,
                                                 window.load_end, plan.rate_profile, plan.warmup_seconds,
                                                 warm=results.warmup_settling is None or results.warmup_settling.settled)
    except AnalysisError as exc:
        raise HarnessError("NoLoadData", str(exc)) from None
    except VerdictError as exc:
        raise HarnessError("ObjectiveError", str(exc)) from None
    run.results, run.verdict = results, verdict
    run.finished_at = utc(tick.now)
    run.analysis_seconds = round(time.monotonic() - began, 3)
    tick.events.append(progress(f"analysis and verdict took {run.analysis_seconds:.2f}s"))
    run.phase = phase_of(verdict)
    failed = [c.name for c in verdict.checks if not c.ok]
    said = ("limited by the load generator: " + "; ".join(verdict.limited_by) if verdict.limited_by else
            "passed" if verdict.passed else "failed: " + ", ".join(failed))
    tick.events.append(progress(f"run {run.index}: {said}"))
    if tick.status.current_run + 1 < len(tick.plans):
        tick.status.current_run += 1
        prepare_run(tick)
        return 0.0
    _finish(tick)
    return 0.0


def _test_verdict(runs: list[RunStatus]) -> Verdict:
    """The test's verdict from its runs': every check and every limit, named by run in a sweep."""
    checks, limited_by = [], []
    for run in runs:
        prefix = f"run {run.index} " if len(runs) > 1 else ""
        verdict = run.verdict or Verdict(passed=False)
        checks += [check.model_copy(update={"name": prefix + check.name}) for check in verdict.checks]
        limited_by += [f"run {run.index}: {why}" if prefix else why for why in verdict.limited_by]
    last = runs[-1].verdict
    return Verdict(passed=all(r.verdict is not None and r.verdict.passed for r in runs), checks=checks,
                   limited_by=limited_by, breakpoint=last.breakpoint if last else None)


def _finish(tick: Tick) -> None:
    status = tick.status
    status.verdict = verdict = _test_verdict(status.runs)
    status.results = status.runs[-1].results
    if len(status.runs) > 1:
        status.sweep = sweep_table(status.runs)
    cleanup(tick.ctx, status, tick.platform, tick.events)
    status.phase = phase_of(verdict)
    status.finished_at = utc(tick.now)
    status.progress.step = Step.DONE
    status.progress.waiting_for = ""
    status.progress.deadline = None
    set_condition(status, "Running", "False", status.phase, "", tick.now)
    set_verdict_conditions(status, tick.now)
    set_outcome_conditions(status, tick.now)
    status.summary = summarize(status)
    held = sum(c.ok for c in verdict.checks)
    tick.events.append(Event(status.phase, f"{status.phase}: {held}/{len(verdict.checks)} checks passed"
                             + (f"; the load generator limited the load: {'; '.join(verdict.limited_by)}"
                                if verdict.limited_by else ""),
                             "Normal" if verdict.passed else "Warning"))
