"""The results page: docs/results.md and its HTML twin (with the key plots), written from the
committed summaries alone (`elves results-page`), so it can be rebuilt without running anything.

Each case of the study sits beside what Elves saw: the rate asked and achieved, p50 / p95 /
p99, failures, the deepest point of each work queue, restarts and OOM kills, replicas over
time, lost requests and logs, the drain, and one sentence answering the case's question.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

from elves.constants import WORK_QUEUES
from elves.engine.compare import CompareError, summary_status
from elves.engine.models.errors import SpecError
from elves.engine.models.load import Load
from elves.engine.models.loadtest import LoadTest, parse_loadtest
from elves.engine.plan import expand_sweep, peak_rate
from elves.engine.format import html_table, observed_text, percent_text, value_text
from elves.engine.report.html import CSS, run_markers, sweep_html
from elves.engine.report.svg import chart
from elves.engine.status import LoadTestStatus, RunResults, RunStatus
from elves.engine.summary import deepest, work_queues
from elves.engine.units import format_duration, format_rate, format_seconds
from elves.study.cases import GROUPS, Case, StudyError, load_study

SUMMARY, SERIES, RUN_FILE, MACHINE_FILE = "summary.json", "series.json", "run.json", "machine.json"
READS = ("getHistory", "getAllHistory", "getStatus")
ERRORS_OK = 0.01


# --- one case's committed files ------------------------------------------------------

@dataclass
class CaseResult:
    case: Case
    summary: dict[str, Any] | None = None
    run: dict[str, Any] | None = None
    series: dict[str, Any] | None = None
    status: LoadTestStatus | None = None
    test: LoadTest | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def runs(self) -> list[RunStatus]:
        return [r for r in (self.status.runs if self.status else []) if r.results is not None]


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None


def read_case(directory: Path, case: Case) -> CaseResult:
    result = CaseResult(case, _json(directory / case.id / SUMMARY), _json(directory / case.id / RUN_FILE),
                        _json(directory / case.id / SERIES))
    if result.summary is not None:
        try:
            result.status = summary_status(result.summary)
            result.test = parse_loadtest(result.summary.get("loadtest", {}), f"{case.id}/{SUMMARY}")
        except (ValueError, SpecError, CompareError) as exc:
            result.problems.append(f"{case.id}/{SUMMARY} unusable: {str(exc).splitlines()[0]}")
    return result


# --- figures -------------------------------------------------------------------------

def run_load(test: LoadTest | None, run: RunStatus | None = None) -> Load | None:
    """The load a run was planned with (a sweep of load.rate or load.users changes it per run)."""
    if test is None:
        return None
    points = expand_sweep(test.spec)
    return points[run.index].load if run is not None and run.index < len(points) else test.spec.load


def asked_rate(test: LoadTest | None, run: RunStatus | None = None) -> float | None:
    load = run_load(test, run)
    return peak_rate(load) if load is not None and not load.closed else None


def asked_text(test: LoadTest | None, run: RunStatus | None = None) -> str:
    """The planned peak arrival rate, or a closed model's users (and iterations)."""
    load = run_load(test, run)
    if load is None or not load.closed:
        return format_rate(asked_rate(test, run))
    users = max([s.users or 0 for s in load.stages or []] or [load.users])
    return f"{users} users" + (f", {load.iterations} iterations" if load.iterations else "")


def queue_text(results: RunResults) -> str:
    queues = [(name, q.max) for name, q in work_queues(results.queues).items() if q.max is not None]
    return ", ".join(f"{name.removeprefix('elves.')} {depth:g}" for name, depth in queues) or "-"


def restarts_text(results: RunResults) -> str:
    parts = [f"{name} {d.restarts}" + (f" ({d.oom_kills} OOM)" if d.oom_kills else "")
             for name, d in results.deployments.items() if d.restarts or d.oom_kills]
    return ", ".join(parts) or "none"


def replicas_text(results: RunResults) -> str:
    """Ready replicas per deployment, with the moments they changed: `ingestor 3, 0 at 1m12s, 3 at 2m05s`."""
    parts = []
    for name, d in results.deployments.items():
        changes, last = [], None
        for point in d.timeline:
            if point.ready is not None and point.ready != last:
                changes.append(f"{point.ready:g}" if last is None else f"{point.ready:g} at {format_duration(round(max(point.t, 0)))}")
                last = point.ready
        if changes:
            parts.append(f"{name} " + ", ".join(changes))
    return "; ".join(parts) or "-"


def lost(results: RunResults) -> tuple[int | None, int | None]:
    return (None, None) if results.ledger is None else (results.ledger.lost_requests, results.ledger.lost_logs)


def drain_text(results: RunResults) -> str:
    return format_seconds(results.drain_seconds) if results.drain_completed else "did not complete"


def point_text(run: RunStatus) -> str:
    return ", ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in run.point.items())


def busy(load: float, cores: int) -> str:
    """How loaded the machine was, in words: other work shares the cores and bends the figures."""
    share = load / max(cores, 1)
    return "quiet" if share < 0.5 else "busy" if share < 2 else "very busy: figures bent by other work"


def sees_text(result: CaseResult) -> str:
    """What Elves saw, in one cell: one clause per run."""
    clauses = []
    for run in result.runs:
        r = run.results
        assert r is not None
        requests, logs = lost(r)
        prefix = f"{point_text(run)}: " if run.point else ""
        clauses.append(f"{prefix}{format_rate(r.rate)} ({asked_text(result.test, run)} asked), p99 "
                       f"{format_seconds(r.total.p99)}, {percent_text(r.total.error_rate)} failed, deepest queue "
                       f"{queue_text(r)}, restarts {restarts_text(r)}, lost {requests}/{logs} (requests/logs), "
                       f"drain {drain_text(r)}")
    return "; ".join(clauses)


# --- findings: one sentence answering the case's question ----------------------------

def _last(result: CaseResult) -> RunResults:
    results = result.runs[-1].results
    assert results is not None
    return results


def _lost_total(results: RunResults) -> int | None:
    requests, logs = lost(results)
    return None if requests is None or logs is None else requests + logs


def _steady(result: CaseResult) -> str:
    r = _last(result)
    top = deepest(r.queues)
    restarts = sum(d.restarts for d in r.deployments.values())
    problems = []
    if restarts:
        problems.append(f"{restarts} restart(s) ({restarts_text(r)})")
    if _lost_total(r) != 0:
        problems.append(f"lost {_lost_total(r)}")
    if (r.total.error_rate or 0) >= ERRORS_OK:
        problems.append(f"{percent_text(r.total.error_rate)} failed")
    limit = result.case.finding.queue_below
    if top is not None and limit is not None and top[1] >= limit:
        problems.append(f"{top[0].removeprefix('elves.')} piled up to {top[1]:g}")
    if problems:
        return "No: " + ", ".join(problems) + "."
    queue = f"the deepest queue {top[0].removeprefix('elves.')} {top[1]:g}" if top else "no queue measured"
    return f"Yes: no restart, nothing lost, {percent_text(r.total.error_rate)} failed, {queue}, p99 {format_seconds(r.total.p99)}."


def _overload(result: CaseResult) -> str:
    r, finding = _last(result), result.case.finding
    queue = finding.queue or WORK_QUEUES[0]
    depth = r.queues[queue].max if queue in r.queues else None
    restarts = sum(d.restarts for d in r.deployments.values())
    short = queue.removeprefix("elves.")
    kept = "nothing was lost" if _lost_total(r) == 0 else f"{_lost_total(r)} were lost"
    if (depth or 0) >= (finding.above or 0) or restarts:
        return f"Yes: {short} piled up to {depth:g} ({restarts} restart(s)) and {kept}."
    return (f"No: the single ingestor kept up ({short} peaked at {depth if depth is None else f'{depth:g}'}, no restart)"
            f" and {kept}: an Elves ingestor does more work a minute than the study's did.")


def _bottleneck(result: CaseResult) -> str:
    r, expect = _last(result), result.case.finding.expect
    top = deepest(r.queues)
    if top is None:
        return "Unknown: no queue depth was measured."
    depths = ", ".join(f"{q.removeprefix('elves.')} {r.queues[q].max:g}" for q in expect
                       if q in r.queues and r.queues[q].max is not None)
    if top[0] in expect and top[1] > 0:
        return f"Yes: the deepest queue was {top[0].removeprefix('elves.')} ({top[1]:g}); the registry's queues: {depths}."
    return (f"No: the deepest queue was {top[0].removeprefix('elves.')} ({top[1]:g}), the registry's stayed at {depths}:"
            f" the registry stores in batches and kept up.")


def _fault_tolerance(result: CaseResult) -> str:
    r = _last(result)
    data = r.endpoints.get("getData")
    reads = {e: r.endpoints[e].error_rate for e in READS if e in r.endpoints and r.endpoints[e].error_rate}
    worst = max(reads.items(), key=lambda item: item[1]) if reads else None
    data_ok = data is not None and (data.error_rate or 0) < ERRORS_OK
    kept = _lost_total(r) == 0 and r.drain_completed
    reads_text = f"{worst[0]} failed {percent_text(worst[1])} over the run" if worst else "no read failed"
    text = (f"getData failed {percent_text(data.error_rate if data else None)} while {reads_text}; queues peaked at "
            f"{queue_text(r)} and drained in {drain_text(r)}; lost {_lost_total(r)}.")
    if data_ok and kept and worst:
        return "Yes: " + text
    return ("Partly: " if data_ok and kept else "No: ") + text


def _served(result: CaseResult) -> str:
    r, finding = _last(result), result.case.finding
    endpoint = finding.endpoint or ""
    mix = result.test.spec.load.effective_mix if result.test else {}
    asked = (asked_rate(result.test) or 0) * mix.get(endpoint, 0) / (sum(mix.values()) or 1)
    got = r.endpoints[endpoint].rate if endpoint in r.endpoints else 0.0
    p99 = format_seconds(r.total.p99)
    text = f"{endpoint} at {format_rate(got)} of {format_rate(asked)} asked, p99 {p99}, {percent_text(r.total.error_rate)} failed"
    if r.throughput_stability is not None:
        text += f", last minute's throughput {r.throughput_stability:.2f} x the first's"
    registry = r.deployments.get("registry")
    if registry is not None and registry.heap_max_bytes is not None:
        text += f", registry heap up to {value_text(registry.heap_max_bytes, 'bytes')}, GC {format_seconds(registry.gc_seconds)}"
    if asked and got >= finding.share * asked and (r.total.error_rate or 0) < ERRORS_OK:
        return f"Yes: {text}."
    return f"No: {text}."


def _memory(result: CaseResult) -> str:
    runs = result.runs
    ooms = [(point_text(run), run.results.deployments.get("ingestor").oom_kills
             if run.results and "ingestor" in run.results.deployments else 0) for run in runs]
    lost_all = [_lost_total(run.results) for run in runs if run.results]
    text = "; ".join(f"{point} {count} OOM kill(s)" for point, count in ooms)
    nothing_lost = all(count == 0 for count in lost_all)
    lost_text = "nothing lost" if nothing_lost else f"lost {lost_all}"
    if ooms and ooms[0][1] > 0 and ooms[-1][1] == 0 and nothing_lost:
        return f"Yes: {text}; {lost_text}."
    return f"No: {text}; {lost_text}."


def _objectives(result: CaseResult) -> str:
    verdict = result.status.verdict if result.status else None
    if verdict is None:
        return "Unknown: no verdict."
    missed = [c for c in verdict.checks if not c.ok]
    broke = (f" It broke at a planned {format_rate(verdict.breakpoint.rate)} ({verdict.breakpoint.check})."
             if verdict.breakpoint else "")
    if not missed:
        return f"Yes: every objective held ({len(verdict.checks)}/{len(verdict.checks)}).{broke}"
    names = ", ".join(f"{c.name} {observed_text(c.name, c.observed)} (wanted {c.target})" for c in missed)
    return f"No: missed {names}.{broke}"


FINDINGS = {"steady": _steady, "overload": _overload, "bottleneck": _bottleneck, "fault_tolerance": _fault_tolerance,
            "served": _served, "memory": _memory, "objectives": _objectives}


def not_run_text(result: CaseResult) -> str | None:
    case = result.case
    if case.file is None:
        return case.reason or "Not run."
    if result.problems:
        return "; ".join(result.problems)
    if result.summary is None:
        if result.run is not None:
            return f"Harness error (exit {result.run.get('exitCode')}): no report; see run.json."
        return (f"Not run: the last suite did not reach it within its time box"
                f" (`elves suite loadtests/study --only {case.id}` runs it).")
    if not result.runs:
        reasons = [c.message for c in (result.status.conditions if result.status else []) if c.type == "HarnessError"]
        return "Ran, but no results: " + (reasons[0] if reasons else "the run ended before its analysis") + "."
    return None


def finding_text(result: CaseResult) -> str:
    return not_run_text(result) or FINDINGS[result.case.finding.kind](result)


# --- the page as blocks, rendered twice ----------------------------------------------

Block = tuple  # ("h", level, text) | ("p", text) | ("table", headers, rows) | ("html", raw)


def detail_blocks(result: CaseResult) -> list[Block]:
    case = result.case
    blocks: list[Block] = [("h", 3, case.title),
                           ("p", f"**The study:** {case.study.load}. **It saw:** {case.study.saw}"),
                           ("p", f"**Question:** {case.question} **Answer:** {finding_text(result)}")]
    run = result.run or {}
    if case.file:
        how = f"**Run:** `{case.file.removeprefix('../')}`"
        shortened = run.get("suiteDuration") if run else case.suite.duration
        if shortened:
            how += f", shortened to {shortened}"
        if case.scaled:
            how += f". {case.scaled}"
        if case.cluster:
            how += f" The study's size: `{case.cluster.removeprefix('../')}`."
        blocks.append(("p", how))
    if run:
        load, cores = (run.get("loadAverageBefore") or [0.0])[0], run.get("cores") or 1
        blocks.append(("p", f"Ran {run.get('started', '?')}, {format_duration(round(run.get('wallSeconds', 0)))} of wall"
                            f" time, exit code {run.get('exitCode')}, code at commit {run.get('commit') or '?'}; load average {load:.1f} on {cores} cores before it"
                            f" ({busy(load, cores)})."))
    if not result.runs:
        return blocks
    headers = ["run", "asked", "achieved", "p50", "p95", "p99", "failed", "deepest queue (work queues)",
               "restarts (OOM)", "lost requests", "lost logs", "drain", "stability"]
    rows = []
    for r_run in result.runs:
        r = r_run.results
        assert r is not None
        requests, logs = lost(r)
        rows.append([point_text(r_run) or str(r_run.index), asked_text(result.test, r_run), format_rate(r.rate),
                     format_seconds(r.total.p50), format_seconds(r.total.p95), format_seconds(r.total.p99),
                     percent_text(r.total.error_rate), queue_text(r), restarts_text(r), str(requests), str(logs),
                     drain_text(r), "-" if r.throughput_stability is None else f"{r.throughput_stability:.2f}"])
    blocks.append(("table", headers, rows))
    endpoint_rows = []
    for r_run in result.runs:
        assert r_run.results is not None
        for name, e in r_run.results.endpoints.items():
            endpoint_rows.append([point_text(r_run) or str(r_run.index), name, str(e.requests), format_rate(e.rate),
                                  percent_text(e.error_rate), str(e.timeouts), str(e.retries), format_seconds(e.p50),
                                  format_seconds(e.p95),
                                  format_seconds(e.p99)])
    blocks.append(("table", ["run", "endpoint", "requests", "rate", "failed", "timed out", "retries", "p50", "p95",
                             "p99"], endpoint_rows))
    blocks.append(("table", ["run", "deployment", "restarts", "OOM kills", "heap max (one replica)", "GC pauses",
                             "CPU (cores, mean)"], [
        [point_text(r_run) or str(r_run.index), name, str(d.restarts), str(d.oom_kills),
         value_text(d.heap_max_bytes, "bytes"), format_seconds(d.gc_seconds),
         "-" if d.cpu_cores is None else f"{d.cpu_cores:.2f}"]
        for r_run in result.runs if r_run.results for name, d in r_run.results.deployments.items()]))
    blocks.append(("p", "Replicas ready over time: " + " | ".join(
        f"{point_text(r_run) or r_run.index}: {replicas_text(r_run.results)}" for r_run in result.runs if r_run.results)))
    if result.status is not None and result.status.sweep:
        blocks.append(("html", sweep_html(result.status)))
    blocks.append(("html", plots(result)))
    return blocks


def plots(result: CaseResult) -> str:
    """The key plots of each run: queue depth and replicas, faults marked."""
    by_index = {r["index"]: r["series"] for r in (result.series or {}).get("runs", [])}
    parts = []
    for run in result.runs:
        series = by_index.get(run.index)
        if not series:
            continue
        points = [p[0] for lines in series.values() for line in lines for p in line["points"]]
        x_range = (min(points, default=0.0), max(points, default=1.0))
        label = f" ({point_text(run)})" if run.point else ""
        parts.append(chart(f"Queue depth{label}", series.get("queue_depth", []), x_range, run_markers(run)))
        parts.append(chart(f"Replicas ready (dashed: desired){label}", series.get("replicas", []), x_range,
                           run_markers(run), dashed=lambda name: name.endswith("desired"), steps=True))
    return "".join(parts)


def page_blocks(results: list[CaseResult], machine: dict[str, Any] | None) -> list[Block]:
    ran = [r for r in results if r.runs]
    blocks: list[Block] = [
        ("h", 1, "Elves results: the study reproduced case by case"),
        ("p", "Generated by `elves results-page` from `docs/results/<case>/summary.json` (written by `make results`,"
              " i.e. `elves suite loadtests/study`); the study's side comes from `loadtests/study/study.yaml`."
              f" {len(ran)} of {len([r for r in results if r.case.file])} runnable cases have results."
              f" Page written {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}."),
    ]
    if machine:
        split = machine.get("cpuSplit")
        cores = (f"k6 on CPU {split['load']}, every service, RabbitMQ, PostgreSQL and Prometheus on CPU"
                 f" {split['system']} (`ELVES_LOCAL_LOAD_CPUS`)." if split else
                 "every service, RabbitMQ, PostgreSQL, Prometheus and k6 on the same cores.")
        blocks.append(("p", f"**Machine:** {machine.get('cpu', '?')}, {machine.get('cores', '?')} cores,"
                            f" {machine.get('memoryGiB', '?')} GiB, {machine.get('os', '?')} (kernel"
                            f" {machine.get('kernel', '?')}), commit {machine.get('commit', '?')}; load average"
                            f" {', '.join(f'{x:.1f}' for x in machine.get('loadAverage', []))} when the suite began"
                            f" ({machine.get('date', '?')}, {busy((machine.get('loadAverage') or [0.0])[0], machine.get('cores') or 1)})."
                            f" The machine was shared with other work: each case says"
                            f" how busy it was. Local mode: {cores}"))
    for group, title in GROUPS.items():
        members = [r for r in results if r.case.group == group]
        if not members:
            continue
        blocks.append(("h", 2, title))
        blocks.append(("table", ["case", "what the study saw", "what Elves sees", "answer"],
                       [[m.case.id, m.case.study.saw, sees_text(m) or "-", finding_text(m)] for m in members]))
    blocks.append(("h", 2, "Every case in detail"))
    for result in results:
        blocks += detail_blocks(result)
    return blocks


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(blocks: list[Block]) -> str:
    lines = ["<!-- Generated by `elves results-page`; edit loadtests/study/study.yaml or rerun, not this file. -->", ""]
    for block in blocks:
        if block[0] == "h":
            lines += ["#" * block[1] + " " + block[2], ""]
        elif block[0] == "p":
            lines += [block[1], ""]
        elif block[0] == "table" and block[2]:
            lines.append("| " + " | ".join(block[1]) + " |")
            lines.append("|" + "---|" * len(block[1]))
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in block[2]]
            lines.append("")
    lines.append("The plots of every run are in the HTML twin, results.html.")
    return "\n".join(lines) + "\n"


def _inline(text: str) -> str:
    """The little Markdown the paragraphs use (**bold**, `code`) as HTML."""
    import re

    html = escape(text)
    html = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", html)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", html)


def html(blocks: list[Block]) -> str:
    parts = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>Elves results</title>",
             f"<style>{CSS} td, th {{ text-align: left; vertical-align: top; }}</style></head><body>"]
    for block in blocks:
        if block[0] == "h":
            parts.append(f"<h{block[1]}>{escape(block[2])}</h{block[1]}>")
        elif block[0] == "p":
            parts.append(f"<p>{_inline(block[1])}</p>")
        elif block[0] == "table" and block[2]:
            parts.append(html_table(block[1], [[_inline(c) for c in row] for row in block[2]]))
        elif block[0] == "html":
            parts.append(block[1])
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_page(directory: Path, study: Path, page: Path) -> list[Path]:
    """docs/results.md and docs/results.html from DIR's summaries; StudyError when study.yaml is bad."""
    cases = load_study(study)
    if not directory.is_dir():
        raise StudyError(f"{directory}: no such results directory")
    results = [read_case(directory, case) for case in cases]
    blocks = page_blocks(results, _json(directory / MACHINE_FILE))
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(markdown(blocks), encoding="utf-8")
    twin = page.with_suffix(".html")
    twin.write_text(html(blocks), encoding="utf-8")
    return [page, twin]
