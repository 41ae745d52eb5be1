"""What `elves run` prints: the live one-line progress and the final summary tables."""

from __future__ import annotations

import re
from dataclasses import dataclass

from elves.engine.models.status import LoadTestStatus
from elves.engine.models.summary import failures_text
from elves.engine.models.units import format_duration, format_rate, format_seconds
from elves.engine.results import promql
from elves.engine.results.format import SCALING_HEADERS, observed_text, percent_text, scaling_row, sweep_verdict, text_table
from elves.engine.results.generator_limit import generator_text
from elves.engine.results.verdict import sweep_answers
from elves.engine.results.prometheus import Prometheus, PrometheusError
from elves.engine.results.report.html import breakpoint_text, warmup_text

LIVE_QUERY_TIMEOUT_SECONDS = 2.0


@dataclass
class Live:
    """Figures of the moment, read from Prometheus (None when unknown)."""

    rate: float | None = None
    p95: float | None = None
    errors: float | None = None
    deepest: tuple[str, float] | None = None
    replicas: dict[str, float] | None = None


def read_live(prom: Prometheus, test_id: str) -> Live:
    """The live figures; a slow or absent Prometheus only blanks them."""
    live = Live()
    try:
        live.rate = prom.value(promql.k6_request_rate(test_id, by=None))
        live.p95 = prom.value(promql.k6_latency_quantile(0.95, test_id))
        live.errors = prom.value(promql.k6_error_rate(test_id))
        top = prom.query(promql.deepest_queue(promql.WORK_QUEUES, namespace=prom.system_namespace))
        if top and top[0].value is not None:
            live.deepest = (top[0].labels.get("queue", "?"), top[0].value)
        ready = prom.by_label(promql.replicas_ready(namespace=prom.system_namespace), "deployment")
        live.replicas = {k: v for k, v in ready.items() if v is not None}
    except PrometheusError:
        pass
    return live


def _elapsed(status: LoadTestStatus, now: float, duration: float, drain_timeout: float) -> str:
    if not status.runs:
        return ""
    run = status.runs[status.current_run]
    if status.phase == "Running" and run.warmup_started_at and not run.warmup_ended_at:
        return f"warm-up {format_duration(round(now - run.warmup_started_at.timestamp()))}"
    if status.phase == "Running" and run.load_started_at:
        return f"{format_duration(round(now - run.load_started_at.timestamp()))}/{format_duration(duration)}"
    if status.phase == "Draining" and run.load_ended_at:
        return f"drain {format_duration(round(now - run.load_ended_at.timestamp()))}/{format_duration(drain_timeout)}"
    return ""


def progress_line(status: LoadTestStatus, live: Live, now: float, duration: float, drain_timeout: float) -> str:
    """`Running run 1/2 0m42s/2m rate 118/min p95 41ms errors 0.00% deepest ingestor.data.in=37 replicas g1 r1 i2`."""
    parts = [f"{status.phase:<9}"]
    if len(status.runs) > 1:
        parts.append(f"run {status.current_run + 1}/{len(status.runs)}")
    elapsed = _elapsed(status, now, duration, drain_timeout)
    if elapsed:
        parts.append(elapsed)
    if status.phase in ("Running", "Draining"):
        parts.append(f"rate {format_rate(live.rate)}")
        parts.append(f"p95 {format_seconds(live.p95)}")
        parts.append(f"errors {percent_text(live.errors)}")
        if live.deepest:
            parts.append(f"deepest {live.deepest[0].removeprefix('elves.')}={live.deepest[1]:g}")
        if live.replicas:
            parts.append("replicas " + " ".join(f"{k[0]}{v:g}" for k, v in sorted(live.replicas.items())))
    if status.progress.waiting_for and status.phase != "Running":
        parts.append(f"({status.progress.waiting_for})")
    return "  ".join(parts)


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    """Names left, figures right."""
    return text_table(headers, rows, right=range(1, len(headers)))


def closing_tables(status: LoadTestStatus, drain_timeout: str) -> list[str]:
    """The tables printed at the end of `elves run`, one string per line."""
    out: list[str] = []
    for run in status.runs:
        results = run.results
        if results is None:
            continue
        point = ", ".join(f"{k}={v}" for k, v in run.point.items())
        out.append("")
        out.append(f"Run {run.index} ({run.test_id}{', ' + point if point else ''}): {run.phase}")
        rows = [[name, str(e.requests), format_rate(e.rate),
                 percent_text(e.error_rate),
                 format_seconds(e.p50), format_seconds(e.p95), format_seconds(e.p99)]
                for name, e in list(results.endpoints.items()) + [("all", results.total)]]
        out += _table(["endpoint", "requests", "rate", "failed", "p50", "p95", "p99"], rows)
        if why := failures_text(results, None, most=10):
            out.append(why)
        if warmup_text(results):
            out.append(warmup_text(results))
        queues = [[q, f"{v.max:g}" if v.max is not None else "-", f"{v.final:g}" if v.final is not None else "-"]
                  for q, v in results.queues.items()]
        if queues:
            out.append("")
            out += _table(["queue", "deepest", "final"], queues)
        out.append("")
        out += _table(["deployment", "restarts", "OOM kills", "ready min..max", "longest unready"], [
            [d, str(v.restarts), str(v.oom_kills), f"{_n(v.replicas_min)}..{_n(v.replicas_max)}",
             format_seconds(v.unready_seconds)]
            for d, v in results.deployments.items()])
        scaling = [[d] + scaling_row(v.scaling) for d, v in results.deployments.items() if v.scaling is not None]
        if scaling:
            out.append("")
            out += _table(SCALING_HEADERS, scaling)
        ledger = results.ledger
        out.append("")
        if ledger is None:
            out.append("ledger: unavailable")
        elif ledger.kind == "counts":
            out.append(f"ledger: {ledger.requests_accepted} accepted ({ledger.accepted_counted}),"
                       f" {ledger.requests_persisted} persisted; lost {ledger.lost_requests}, surplus {ledger.surplus}")
        else:
            out.append(f"ledger: {ledger.accepted} accepted by k6, {ledger.logs_persisted}/{ledger.logs_expected} logs and"
                       f" {ledger.results_done + ledger.results_failed}/{ledger.requests_accepted} results persisted;"
                       f" lost {ledger.lost_requests} requests, {ledger.lost_logs} logs;"
                       f" {ledger.duplicates} duplicates discarded")
        drained = format_seconds(results.drain_seconds) if results.drain_completed else f"not within {drain_timeout}"
        out.append(f"{generator_text(results)}; drained in {drained}")
    if status.sweep:
        out.append("")
        keys = list(status.sweep[0].point)
        out += _table(["run"] + keys + ["throughput", "speedup", "efficiency", "p99", "failed", "deepest", "lost",
                                        "replica-s", "scale-up lag", "verdict"], [
            [str(r.index)] + [str(r.point.get(k)) for k in keys] + [
                format_rate(r.throughput), "-" if r.speedup is None else f"{r.speedup:.2f}x",
                "-" if r.efficiency is None else f"{r.efficiency * 100:.0f}%", format_seconds(r.p99),
                percent_text(r.error_rate),
                _n(r.queue_depth_max), _n(r.lost), _replica_seconds(r.replica_seconds),
                format_seconds(r.scale_up_lag_seconds), sweep_verdict(r)]
            for r in status.sweep])
        out += [f"held: {answer}" for answer in sweep_answers(status.sweep)]
    if status.verdict is not None:
        out.append("")
        out += _table(["check", "observed", "objective", "result"], [
            [c.name, observed_text(c.name, c.observed), c.target, "ok" if c.ok else "MISSED" + (f" ({c.detail})" if c.detail else "")]
            for c in status.verdict.checks])
        if status.verdict.breakpoint is not None:
            out.append(f"breakpoint: {breakpoint_text(status.verdict.breakpoint)}")
    return out


def headline(message: str) -> str:
    """One line out of a long reason: k6's last error message when it quotes its log."""
    first = message.strip().splitlines()[0] if message.strip() else ""
    errors = re.findall(r'level=error msg="((?:[^"\\]|\\.)*)"', message)
    if errors:
        exited = re.match(r"^(.*?exited with code \d+(?: \(.*?\))?):\s", first)
        prefix = exited.group(1) if exited else first.split(": ")[0]
        return f"{prefix}: {errors[-1]}"
    return first[:300]


def verdict_line(status: LoadTestStatus) -> str:
    if status.phase == "Error":
        errors = [c for c in status.conditions if c.type == "HarnessError" and c.status == "True"]
        reason = f" ({errors[0].reason}): {headline(errors[0].message)}" if errors else ""
        return f"Verdict: ERROR{reason}"
    checks = status.verdict.checks if status.verdict else []
    passed = sum(c.ok for c in checks)
    missed = [c.name for c in checks if not c.ok]
    if status.phase == "Limited" and status.verdict is not None:
        return (f"Verdict: LIMITED by the load generator, not the system ({passed}/{len(checks)} checks, on k6's"
                f" figures): {'; '.join(status.verdict.limited_by)}")
    word = "PASSED" if status.phase == "Succeeded" else "FAILED"
    return f"Verdict: {word} ({passed}/{len(checks)} checks)" + (f"; missed: {', '.join(missed)}" if missed else "")


def _replica_seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def _n(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"
