"""The report page: one self-contained HTML file (inline CSS and SVG, nothing fetched)."""

from __future__ import annotations

from html import escape
from typing import Any

import yaml

from elves.engine.models.status import LoadTestStatus, RunStatus
from elves.engine.models.summary import failures_text
from elves.engine.models.units import format_duration, format_rate, format_seconds
from elves.engine.results.format import SCALING_HEADERS, html_table, observed_text, scaling_row, sweep_verdict, value_text
from elves.engine.results.generator_limit import generator_text
from elves.engine.results.verdict import sweep_answers
from elves.engine.results.report.svg import Marker, chart

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px auto; max-width: 1000px;
       color: #222; padding: 0 12px; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #ddd; }
h3 { font-size: 15px; margin: 18px 0 6px; }
table { border-collapse: collapse; margin: 6px 0 12px; } td, th { padding: 3px 10px; border-bottom: 1px solid #eee;
       text-align: right; } th { background: #f4f4f4; } td:first-child, th:first-child { text-align: left; }
.badge { display: inline-block; padding: 2px 10px; border-radius: 10px; color: #fff; font-weight: 600; }
.Succeeded { background: #2e7d32; } .Failed { background: #c62828; } .Error { background: #ef6c00; }
.Limited { background: #6a1b9a; }
.Running, .Pending, .Preparing, .Draining, .Analyzing { background: #1565c0; }
.ok { color: #2e7d32; font-weight: 600; } .bad { color: #c62828; font-weight: 600; }
.muted { color: #777; } .chart { display: block; margin: 4px 0 10px; }
.tick, .legend { font-size: 11px; fill: #444; } .marker-label { font-size: 10px; } .empty { fill: #aaa; }
pre { background: #f7f7f7; padding: 10px; overflow-x: auto; font-size: 12px; }
"""


def warmup_text(results: Any) -> str | None:
    """The warm-up in one sentence (None without one): its requests are in neither table nor verdict;
    a measured one says whether and when the JVMs settled."""
    w = results.warmup
    if w is None:
        return None
    text = (f"warm-up: the first {format_duration(results.warmup_seconds)} ({w.requests} requests,"
            f" p99 {format_seconds(w.p99)}, failed {value_text(w.error_rate, 'percent')}) are left out of the"
            " tables, the verdict and the breakpoint")
    if (settling := getattr(results, "warmup_settling", None)) is not None:
        text += "; " + settling_text(settling)
    return text


def settling_text(s: Any) -> str:
    """A measured warm-up's finding: when the JIT and the p99 settled, or why they did not."""
    jit = ", ".join(f"{app} {ms:g} ms/s" for app, ms in s.jit_ms_per_second.items()) or "unknown"
    figures = f"JIT compilation {jit}, p99 {format_seconds(s.p99)}"
    if s.settled:
        text = f"the JVMs settled after {format_duration(s.settled_after_seconds)} ({figures})"
        if s.lasted_seconds is not None and s.lasted_seconds < s.timeout_seconds:
            text += (f"; the warm-up stopped once settled, after {format_duration(s.lasted_seconds)} of its"
                     f" {format_duration(s.timeout_seconds)} bound")
        return text
    return (f"NOT SETTLED within the warm-up's {format_duration(s.timeout_seconds)} (spec.load.warmupTimeout):"
            f" {s.reason}; at its end {figures}")


def breakpoint_text(b: Any) -> str:
    """A breakpoint in one sentence, marked when the warm-up before it did not settle."""
    if getattr(b, "never_held", False):
        text = (f"{b.check} never held: broken from the load's first sample, at the planned {format_rate(b.rate)}"
                f" it started at (k6 achieved {format_rate(b.achieved_rate)}); the breakpoint is below the ramp")
    else:
        text = (f"{b.check} broke {format_duration(b.at_seconds)} into the load, at a planned {format_rate(b.rate)}"
                f" (k6 achieved {format_rate(b.achieved_rate)})")
    if not b.warm:
        text += "; found before the JVMs were warm: it may be the JIT's breakpoint, not the system's"
    return text


def verdict_table(status: LoadTestStatus) -> str:
    if status.verdict is None:
        return "<p class='muted'>No verdict: the test did not get as far as the analysis.</p>"
    rows = [[escape(c.name), observed_text(c.name, c.observed), escape(c.target),
             "<span class='ok'>ok</span>" if c.ok else "<span class='bad'>missed</span>", escape(c.detail)]
            for c in status.verdict.checks]
    html = html_table(["check", "observed", "objective", "", "note"], rows)
    breakpoint = status.verdict.breakpoint
    if breakpoint is not None:
        html += f"<p><b>Breakpoint:</b> {escape(breakpoint_text(breakpoint))}.</p>"
    return html


def sweep_html(status: LoadTestStatus) -> str:
    if not status.sweep:
        return ""
    keys = list(status.sweep[0].point)
    rows = []
    for row in status.sweep:
        rows.append([str(row.index)] + [escape(str(row.point.get(k))) for k in keys] + [
            value_text(row.rate, "rate"), value_text(row.throughput, "rate"),
            f"{row.speedup:.2f}x" if row.speedup is not None else "-",
            f"{row.efficiency * 100:.0f} %" if row.efficiency is not None else "-",
            value_text(row.p95, "seconds"), value_text(row.p99, "seconds"), value_text(row.error_rate, "percent"),
            value_text(row.queue_depth_max), value_text(row.lost),
            "-" if row.replica_seconds is None else f"{row.replica_seconds:.0f}",
            value_text(row.scale_up_lag_seconds, "seconds"),
            f"<span class='{'ok' if row.passed else 'bad'}'>{sweep_verdict(row)}</span>"])
    headers = ["run"] + keys + ["rate", "throughput", "speedup", "efficiency", "p95", "p99", "failed",
                                "deepest queue", "lost", "replica-seconds", "scale-up lag", "verdict"]
    return ("<h2>Sweep</h2><p class='muted'>Throughput is completed work per second over load and drain;"
            " efficiency is the speedup over the first point of the same load divided by the growth of the swept"
            " system value.</p>" + html_table(headers, rows)
            + "".join(f"<p><b>Held:</b> {escape(answer)}.</p>" for answer in sweep_answers(status.sweep)))


def run_markers(run: RunStatus) -> list[Marker]:
    """The faults where they were applied (not where planned) and the ends of load and drain, for
    the plots' x axis."""
    start = run.load_started_at.timestamp() if run.load_started_at else None
    markers = [Marker(f.at if start is None else f.fired_at.timestamp() - start, f.label or f.action)
               for f in run.faults]
    if start is not None and run.load_ended_at:
        markers.append(Marker(run.load_ended_at.timestamp() - start, "load end", "phase"))
    if start is not None and run.drained_at:
        markers.append(Marker(run.drained_at.timestamp() - start, "drained", "phase"))
    return markers


def scaling_markers(run: RunStatus) -> list[Marker]:
    """Where each autoscaled deployment's scale-up lag began (its trigger) and ended (a replica added and Ready)."""
    markers = []
    for name, deployment in (run.results.deployments.items() if run.results else []):
        figures = deployment.scaling
        if figures is None or figures.triggered_at is None:
            continue
        markers.append(Marker(figures.triggered_at, f"{name} trigger", "phase"))
        if figures.scale_up_lag_seconds is not None:
            markers.append(Marker(figures.triggered_at + figures.scale_up_lag_seconds, f"{name} +1 ready", "phase"))
    return markers


def scaling_html(run: RunStatus) -> str:
    """The autoscaling figures under the replica timeline (deployments that have them)."""
    rows = [[escape(d)] + [escape(cell) for cell in scaling_row(v.scaling)]
            for d, v in (run.results.deployments.items() if run.results else []) if v.scaling is not None]
    if not rows:
        return ""
    return ("<p class='muted'>Replica-seconds: ready replicas over the load and the drain (the cost). Scale-up lag:"
            " from the trigger (the work queue past KEDA's target, or the load's start for the HPA) to the first added"
            " replica Ready. Scale-down: from the load's end to the desired count back at its minimum.</p>"
            + html_table(SCALING_HEADERS, rows))


def plots_html(run: RunStatus, series: dict[str, Any] | None) -> str:
    if not series:
        return "<p class='muted'>No time series saved for this run.</p>" + scaling_html(run)
    points = [p[0] for lines in series.values() for line in lines for p in line["points"]]
    x_range = (min(points, default=0.0), max(points, default=1.0))
    markers = run_markers(run)
    charts = [
        chart("Queue depth (messages, ready + unacknowledged)", series.get("queue_depth", []), x_range, markers),
        chart("Request rate (per second, by endpoint)", series.get("request_rate", []), x_range, markers,
              y_format=lambda v: f"{v:.3g}"),
        chart("Latency percentiles (all endpoints)", series.get("latency", []), x_range, markers,
              y_format=format_seconds),
        chart("Failed requests (share)", series.get("error_rate", []), x_range, markers,
              y_format=lambda v: f"{v * 100:.3g} %"),
        chart("Replicas per deployment (dashed: desired)", series.get("replicas", []), x_range,
              markers + scaling_markers(run), dashed=lambda label: label.endswith("desired"), steps=True),
        chart("Restarts per deployment during the run", series.get("restarts", []), x_range, markers, steps=True),
    ]
    html = [f"<h3>{escape(c.split('<title>')[1].split('</title>')[0])}</h3>{c}" for c in charts]
    html[-2] += scaling_html(run)  # under the replica timeline
    return "".join(html)


def limited_html(limited_by: list[str]) -> str:
    """Why the load generator, not the system, limited the load (nothing when it did not)."""
    if not limited_by:
        return ""
    items = "".join(f"<li>{escape(why)}</li>" for why in limited_by)
    return (f"<p class='bad'>Limited by the load generator, not the system: the figures below are k6's as much as"
            f" the system's, so no objective, met or missed, is the system's verdict.</p><ul>{items}</ul>")


def run_html(run: RunStatus, series: dict[str, Any] | None, title: str) -> str:
    parts = [f"<h2>{escape(title)}</h2>"]
    if run.message:
        parts.append(f"<p>{escape(run.message)}</p>")
    results = run.results
    if results is not None:
        rows = []
        for name, e in list(results.endpoints.items()) + [("all", results.total)]:
            rows.append([escape(name), str(e.requests), value_text(e.rate, "rate"),
                         value_text(e.error_rate, "percent"), str(e.timeouts), str(e.retries),
                         value_text(e.p50, "seconds"), value_text(e.p90, "seconds"), value_text(e.p95, "seconds"),
                         value_text(e.p99, "seconds"), value_text(e.mean, "seconds"), value_text(e.concurrency)])
        parts.append("<h3>Requests</h3>" + html_table(
            ["endpoint", "requests", "rate", "failed", "timed out", "retries", "p50", "p90", "p95", "p99", "mean",
             "in flight (Little)"], rows))
        if why := failures_text(results, None, most=10):
            parts.append(f"<p>{escape(why)}.</p>")
        if warmup_text(results):
            parts.append(f"<p>{escape(warmup_text(results))}.</p>")
        parts.append(f"<p>{escape(generator_text(results))}; drain: "
                     f"{format_seconds(results.drain_seconds) if results.drain_completed else 'did not complete'};"
                     f" throughput stability (last minute over first): {value_text(results.throughput_stability)}.</p>")
        parts.append("<h3>Queues</h3>" + html_table(["queue", "deepest", "final"], [
            [escape(q), value_text(v.max), value_text(v.final)] for q, v in results.queues.items()]))
        parts.append("<h3>Deployments</h3>" + html_table(
            ["deployment", "restarts", "OOM kills", "ready min", "ready max", "longest unready", "heap max (one replica)",
             "GC pauses",
             "CPU (cores, mean)"], [
                [escape(d), str(v.restarts), str(v.oom_kills), value_text(v.replicas_min), value_text(v.replicas_max),
                 value_text(v.unready_seconds, "seconds"), value_text(v.heap_max_bytes, "bytes"),
                 value_text(v.gc_seconds, "seconds"), value_text(v.cpu_cores)]
                for d, v in results.deployments.items()]))
        ledger = results.ledger
        if ledger is not None and ledger.kind == "counts":
            parts.append(f"<h3>Ledger</h3><p>Accepted: {escape(ledger.accepted_counted)}.</p>" + html_table(
                ["accepted", "persisted", "lost", "surplus (persisted beyond accepted)"],
                [[str(ledger.requests_accepted), str(ledger.requests_persisted), _lost(ledger.lost_requests),
                  str(ledger.surplus)]]))
        elif ledger is not None:
            endpoints = sorted(set(ledger.accepted_by_endpoint) | set(ledger.logs_by_endpoint))
            parts.append("<h3>Ledger</h3>" + html_table(["", "k6 2xx (accepted)", "activity logs persisted"], [
                [escape(e), str(ledger.accepted_by_endpoint.get(e, 0)), str(ledger.logs_by_endpoint.get(e, "-"))]
                for e in endpoints] + [["all", str(ledger.accepted), str(ledger.logs_persisted)]]))
            parts.append(html_table(["data requests accepted", "persisted", "results done", "failed", "lost requests",
                                 "lost logs", "duplicates discarded"], [[
                str(ledger.requests_accepted), str(ledger.requests_persisted), str(ledger.results_done),
                str(ledger.results_failed), _lost(ledger.lost_requests), _lost(ledger.lost_logs),
                str(ledger.duplicates)]]))
        else:
            parts.append("<p class='bad'>The registry's ledger was unavailable: nothing lost cannot be claimed.</p>")
    if run.faults:
        parts.append("<h3>Faults</h3>" + html_table(["at", "fired", "action", "result"], [
            [format_duration(f.at), f.fired_at.strftime("%H:%M:%S"), escape(f.action), escape(f.message)]
            for f in run.faults]))
    parts.append(plots_html(run, series))
    return "".join(parts)


def _lost(count: int) -> str:
    return f"<span class='{'ok' if count == 0 else 'bad'}'>{count}</span>"


def page(document: dict[str, Any], status: LoadTestStatus, series: dict[str, Any], note: str = "") -> str:
    """The whole report; `document` is the LoadTest as written (apiVersion, kind, metadata, spec)."""
    name = document.get("metadata", {}).get("name", "loadtest")
    by_index = {r["index"]: r["series"] for r in series.get("runs", [])}
    errors = [c for c in status.conditions if c.type == "HarnessError" and c.status == "True"]
    lines = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>Elves report: {escape(name)}</title>",
             f"<style>{CSS}</style></head><body>",
             f"<h1>{escape(name)} <span class='badge {status.phase}'>{status.phase}</span></h1>",
             f"<p class='muted'>{escape(status.summary.verdict)} · started "
             f"{status.started_at.strftime('%Y-%m-%d %H:%M:%S UTC') if status.started_at else '-'} · "
             f"{len(status.runs)} run(s) · rate {escape(status.summary.rate or '-')} · "
             f"p99 {escape(status.summary.p99 or '-')} · deepest queue {escape(status.summary.deepest_queue or '-')}</p>"]
    for condition in errors:
        lines.append(f"<p class='bad'>Harness error ({escape(condition.reason)}): {escape(condition.message)}</p>")
    if note:
        lines.append(f"<p class='muted'>{escape(note)}</p>")
    lines.append("<h2>Verdict</h2>" + (limited_html(status.verdict.limited_by) if status.verdict else "")
                 + verdict_table(status))
    lines.append(sweep_html(status))
    for run in status.runs:
        point = ", ".join(f"{k} = {v}" for k, v in run.point.items())
        title = f"Run {run.index}" + (f" ({point})" if point else "") + f" · {run.test_id} · {run.phase}"
        lines.append(run_html(run, by_index.get(run.index), title))
    spec_yaml = yaml.safe_dump(document, sort_keys=False)
    lines.append(f"<h2>The LoadTest</h2><pre>{escape(spec_yaml)}</pre></body></html>")
    return "\n".join(lines)
