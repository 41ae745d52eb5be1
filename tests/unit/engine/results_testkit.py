"""Summaries written by the engine's own report writer, for the tests of `elves compare` and
the results page: the known run (engine_testkit.RUN) analysed from a real Prometheus, its
figures changed through the status models, so a summary can never drift from what
`elves run` writes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from elves.engine.models.loadtest import LoadTest, parse_loadtest
from elves.engine.models.status import LoadTestStatus, RunResults, RunStatus, Verdict
from elves.engine.models.summary import summarize
from elves.engine.results.analysis import RunWindow, analyze, utc
from elves.engine.results.generator_limit import generator_limits
from elves.engine.results.prometheus import Prometheus
from elves.engine.results.report import write_report
from elves.engine.results.verdict import evaluate, phase_of, verdict_of
from engine_testkit import RUN

LEDGER = {"requests": 120, "results": {"done": 120, "failed": 0}, "logs": 180,
          "logsByEndpoint": {"getData": 120, "getStatus": 60}, "duplicates": 0}
SPEC = {"load": {"scenario": "system-mix", "rate": "180/min", "duration": "1m"}}
# The known run's 3 failed getStatus of 243 requests miss the default 1 % objective: a comparison
# of figures needs a run that passed (a Failed new run is never as good as its baseline).
PASSING_SPEC = {**SPEC, "slo": [{"metric": "lost_requests", "op": "==", "value": 0},
                                {"metric": "http_req_failed_rate", "op": "<", "value": 0.05}]}


def known_run(prom: Prometheus, spec: dict[str, Any] | None = None,
              name: str = "known-run") -> tuple[LoadTest, RunResults, Verdict]:
    """The known run's LoadTest, results and verdict."""
    test = parse_loadtest({"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest", "metadata": {"name": name},
                           "spec": spec or SPEC})
    results = analyze(prom, RunWindow(RUN.test_id, RUN.load_start, RUN.load_end, RUN.drain_end, 30.0), LEDGER)
    verdict = evaluate(test.spec.objectives, results, prom, RUN.drain_end)
    # The backfilled history has no k6 latency histograms: give the run latencies to compare.
    results.total = results.total.model_copy(update={"p50": 0.030, "p95": 0.090, "p99": 0.120})
    return test, results, verdict


def changed(results: RunResults, changes: dict[str, Any]) -> RunResults:
    """A copy of `results`; `total`, `ledger` take fields to update, `queues`, `deployments`,
    `endpoints` a dict of {name: fields}; a plain figure (`dropped_iterations`) or a part the
    results lack (`generator_cpu`) takes its new value."""
    copy = results.model_copy(deep=True)
    for part, fields in changes.items():
        target = getattr(copy, part)
        if isinstance(target, dict):
            for name, values in fields.items():
                target[name] = target[name].model_copy(update=values)
        elif isinstance(target, BaseModel):
            setattr(copy, part, target.model_copy(update=fields))
        else:
            setattr(copy, part, fields)
    return copy


def write_summary(directory: Path, known: tuple[LoadTest, RunResults, Verdict],
                  points: list[dict[str, Any]] | None = None, per_run: list[dict[str, Any]] | None = None,
                  **changes: Any) -> Path:
    """A report directory written by write_report: one run per point (one without points),
    each run's results changed by `changes` and then by its entry of `per_run`."""
    test, results, verdict = known
    runs = []
    for index, point in enumerate(points or [{}]):
        run_results = changed(changed(results, changes), (per_run or [{}] * (index + 1))[index])
        # The verdict as the run would have judged its changed figures (a limited run says so).
        run_verdict = verdict_of(verdict.checks, generator_limits(run_results))
        runs.append(RunStatus(index=index, test_id=f"{RUN.test_id}{index}", point=point, phase=phase_of(run_verdict),
                              load_started_at=utc(RUN.load_start), load_ended_at=utc(RUN.load_end),
                              results=run_results, verdict=run_verdict))
    status = LoadTestStatus(phase=runs[-1].phase, runs=runs, results=runs[-1].results, verdict=runs[-1].verdict)
    status.summary = summarize(status)
    write_report(directory, test, status, None)
    return directory
