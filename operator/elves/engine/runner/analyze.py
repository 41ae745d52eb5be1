"""The analysis of a run, its verdict, the next sweep point or the end of the test."""

from __future__ import annotations

import time
from pathlib import Path

from elves.engine import analysis
from elves.engine.analysis import AnalysisError, leave_out_warmup, ledger_since
from elves.engine.ledger import LedgerUnavailable
from elves.engine.compare import CompareError, baseline_checks, load_summary
from elves.engine.compare.history import find_baseline, wanted
from elves.engine.runner.context import Event, HarnessError, epoch, progress, utc
from elves.engine.runner.drain import logged_endpoints, run_window
from elves.engine.runner.outcome import cleanup, set_condition, set_outcome_conditions
from elves.engine.runner.prepare import prepare_run
from elves.engine.runner.tick import Tick
from elves.engine.status import Check, RunResults, Step, Verdict
from elves.engine.summary import summarize
from elves.engine.verdict import VerdictError, evaluate, find_breakpoint, sweep_table


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
    return baseline_checks(summary, name, results, baseline.fail_on)


def analyze(tick: Tick) -> float:
    run, plan, spec = tick.run, tick.plan, tick.ctx.test.spec
    prom = tick.ctx.prometheus(tick.platform)
    window = run_window(tick, end=epoch(run.drained_at) if run.drained_at else tick.now)
    try:
        ledger = ledger_since(tick.ctx.ledger(tick.platform, plan.test_id), run.ledger_baseline)
    except LedgerUnavailable:
        raise  # a registry that cannot answer now (a replica or its database restarting): waited out
    except Exception as exc:  # noqa: BLE001 - analysed without it; the lost_* checks then fail with why
        ledger = None
        tick.events.append(progress(f"the registry's ledger is unavailable: {exc}"))
    began = time.monotonic()  # a figure for people (drain end -> verdict), not a deadline
    try:
        results = analysis.analyze(prom, window, ledger, logged_endpoints(tick))
        if plan.warmup_seconds > 0:
            leave_out_warmup(results, prom, window, plan.warmup_seconds)
        verdict = evaluate(spec.objectives, results, prom, window.end)
        if spec.baseline is not None:
            verdict.checks += _baseline_checks(tick, results)
            verdict.passed = all(c.ok for c in verdict.checks)
        if spec.load.profile == "breakpoint":
            verdict.breakpoint = find_breakpoint(spec.objectives, prom, plan.test_id, window.load_start,
                                                 window.load_end, plan.profile, plan.warmup_seconds)
    except AnalysisError as exc:
        raise HarnessError("NoLoadData", str(exc)) from None
    except VerdictError as exc:
        raise HarnessError("ObjectiveError", str(exc)) from None
    run.results, run.verdict = results, verdict
    run.finished_at = utc(tick.now)
    run.analysis_seconds = round(time.monotonic() - began, 3)
    tick.events.append(progress(f"analysis and verdict took {run.analysis_seconds:.2f}s"))
    run.phase = "Succeeded" if verdict.passed else "Failed"
    failed = [c.name for c in verdict.checks if not c.ok]
    tick.events.append(progress(f"run {run.index}: {'passed' if verdict.passed else 'failed: ' + ', '.join(failed)}"))
    if tick.status.current_run + 1 < len(tick.plans):
        tick.status.current_run += 1
        prepare_run(tick)
        return 0.0
    _finish(tick)
    return 0.0


def _finish(tick: Tick) -> None:
    status = tick.status
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
    cleanup(tick.ctx, status, tick.platform, tick.events)
    status.phase = "Succeeded" if passed else "Failed"
    status.finished_at = utc(tick.now)
    status.progress.step = Step.DONE
    status.progress.waiting_for = ""
    status.progress.deadline = None
    failed = [c for c in checks if not c.ok]
    set_condition(status, "Running", "False", status.phase, "", tick.now)
    set_condition(status, "Passed", "True" if passed else "False",
                  "ObjectivesMet" if passed else "ObjectivesMissed",
                  "; ".join(f"{c.name}: observed {_observed(c.observed)}, wanted {c.target}"
                            + (f" ({c.detail})" if c.detail else "") for c in failed),
                  tick.now)
    set_outcome_conditions(status, tick.now)
    status.summary = summarize(status)
    tick.events.append(Event(status.phase, f"{status.phase}: {len(checks) - len(failed)}/{len(checks)} checks passed",
                             "Normal" if passed else "Warning"))


def _observed(value: float | None) -> str:
    return "no data" if value is None else f"{value:.4g}"
