"""The results page: docs/results.md and its HTML twin (with the key plots), written from the
committed summaries alone (`elves results-page`), so it can be rebuilt without running anything.

Each case of the study sits beside what Elves saw: the load asked and sent (counted in one
unit), p50 / p95 / p99, failures, the deepest point of each work queue, restarts and OOM
kills, replicas over time, lost requests and logs, logs stored beyond those expected,
duplicates, the drain, how busy the machine was, and the answer to the case's question
(study/answers.py).
"""

from __future__ import annotations

import time
from html import escape
from pathlib import Path
from typing import Any

from elves.engine.models.units import format_duration, format_rate, format_seconds
from elves.engine.results.format import html_table, percent_text, value_text
from elves.engine.results.report.html import CSS, run_markers, sweep_html
from elves.engine.results.report.svg import chart
from elves.study.answers import RULES, STANDING_RULES, answer, rule_text
from elves.study.cases import GROUPS, StudyError, load_study
from elves.study.case_results import (MACHINE_FILE, CaseResult, read_json, asked_text, drain_text, lost, point_text,
                                 read_case, replicas_text, restarts_text, sent_text, unexpected_logs)
from elves.study.queue_depth import queues_text
from elves.engine.results.machine_state import BUSY_LOAD_PER_CORE, busy_reason, saturated_reason



def busy(load: float, cores: int) -> str:
    """How loaded the machine was, in words, for the header (a case's own record says more)."""
    share = load / max(cores, 1)
    return "quiet" if share <= BUSY_LOAD_PER_CORE else "busy: other work shares the cores and bends the figures"


def sees_text(result: CaseResult) -> str:
    """What Elves saw, in one cell: one clause per run."""
    clauses = []
    for run in result.runs:
        r = run.results
        assert r is not None
        requests, logs = lost(r)
        prefix = f"{point_text(run)}: " if run.point else ""
        unexpected = unexpected_logs(r)
        ledger = f"lost {requests}/{logs} (requests/logs)" + (f", unexpected logs {unexpected:,}" if unexpected else "")
        duplicates = r.ledger.duplicates if r.ledger else None
        clauses.append(f"{prefix}asked {asked_text(result.test, run)}, sent {sent_text(result.test, run)}, p99 "
                       f"{format_seconds(r.total.p99)}, {percent_text(r.total.error_rate)} of all requests failed,"
                       f" queues: {queues_text(result, run)}; restarts {restarts_text(r)}, {ledger}, duplicates"
                       f" {duplicates}, drain {drain_text(r)}")
    return "; ".join(clauses)


def not_run_text(result: CaseResult) -> str | None:
    case = result.case
    if case.file is None:
        return case.reason or "Not run."
    if result.problems:
        return "; ".join(result.problems)
    if result.summary is None:
        if result.run is not None:
            return f"Harness error (exit {result.run.get('exitCode')}): no report; see run.json."
        if case.platform == "cluster":
            return f"Not run yet: it needs the cluster (`bench/cluster_cases.py {case.id}` runs it)."
        return (f"Not run: the last suite did not reach it within its time box"
                f" (`elves suite loadtests/study --only {case.id}` runs it).")
    if not result.runs:
        reasons = [c.message for c in (result.status.conditions if result.status else []) if c.type == "HarnessError"]
        return "Ran, but no results: " + (reasons[0] if reasons else "the run ended before its analysis") + "."
    return None


def rerun_rows(results: list[CaseResult]) -> list[list[str]]:
    """[case, outcome, rule, why] of each case a rerun must answer: Inconclusive, Cannot tell, or a
    depth that cannot be compared with the study's steady state."""
    rows = []
    for result in results:
        found = answer(result)
        head = found.text.split(". What it measured")[0]
        if found.outcome in ("Inconclusive", "Cannot tell"):
            rows.append([result.case.id, found.outcome, found.rule, head])
        elif "cannot be compared" in found.text:
            why = found.text[found.text.index("cannot be compared"):].split(";")[0].rstrip(".")
            rows.append([result.case.id, found.outcome, found.rule, f"its depth {why}"])
    return rows


def finding_text(result: CaseResult) -> str:
    return not_run_text(result) or str(answer(result))


# --- the page as blocks, rendered twice ----------------------------------------------

Block = tuple  # ("h", level, text) | ("p", text) | ("table", headers, rows) | ("html", raw)


def run_line(run: dict[str, Any]) -> str:
    """When and how a case ran, and how busy the machine was, from its run.json."""
    load, cores = (run.get("loadAverageBefore") or [0.0])[0], run.get("cores") or 1
    code = run.get("commit") or "?"
    if run.get("dirty"):
        code += " with uncommitted changes"
    elif "dirty" not in run:
        code += " (uncommitted changes not recorded)"
    machine = run.get("machine") or {}
    during = machine.get("during") or {}
    measured = (f"; other processes used {during['outsideCoresMean']:.2f} cores on average while it ran"
                if during.get("outsideCoresMean") is not None else "")
    waited = (machine.get("before") or {}).get("waitedSeconds")
    waited_text = f", after waiting {format_duration(round(waited))} for a quiet machine" if waited else ""
    reason = busy_reason(run)
    where = f" on {run['cpu']}" if run.get("cpu") else ""
    if run.get("platform"):
        where += f", on the {run['platform']}"
    saturated = saturated_reason(run)
    state = (f"**ran on a busy machine**: {reason}." if reason else
             f"load average {load:.1f} on {cores} cores before it{measured}: quiet of other work, but **saturated**:"
             f" {saturated}." if saturated else
             f"load average {load:.1f} on {cores} cores before it{measured}: quiet.")
    return (f"Ran {run.get('started', '?')}{where}{waited_text}, {format_duration(round(run.get('wallSeconds', 0)))} of wall"
            f" time, exit code {run.get('exitCode')}, code at commit {code}; {state}")


def detail_blocks(result: CaseResult) -> list[Block]:
    case = result.case
    blocks: list[Block] = [("h", 3, case.title),
                           ("p", f"**The study:** {case.study.load}. **It saw:** {case.study.saw}"
                                 f" (the notes on the study, \"{case.study.section}\")"),
                           ("p", f"**Question:** {case.question} **Answer:** {finding_text(result)}")]
    run = result.run or {}
    if case.file:
        how = f"**Run:** `{case.file.removeprefix('../')}`"
        time_box = run.get("suiteDuration") if run else case.suite.duration
        if time_box:  # stages and fault times scaled to it: shorter than the example's, or as long
            how += f", in the suite's time box of {time_box}"
        if case.scaled:
            how += f". {case.scaled}"
        if case.cluster:
            how += f" The study's size: `{case.cluster.removeprefix('../')}`."
        blocks.append(("p", how))
    if run:
        blocks.append(("p", run_line(run)))
    if not result.runs:
        return blocks
    headers = ["run", "asked", "sent", "p50", "p95", "p99", "failed (of all requests)",
               "work queues: peak, steady state, trend at the load's end",
               "restarts (OOM)", "lost requests", "lost logs", "unexpected logs", "duplicates", "drain", "stability"]
    rows = []
    for r_run in result.runs:
        r = r_run.results
        assert r is not None
        requests, logs = lost(r)
        rows.append([point_text(r_run) or str(r_run.index), asked_text(result.test, r_run), sent_text(result.test, r_run),
                     format_seconds(r.total.p50), format_seconds(r.total.p95), format_seconds(r.total.p99),
                     percent_text(r.total.error_rate), queues_text(result, r_run), restarts_text(r), str(requests),
                     str(logs),
                     f"{unexpected_logs(r):,}", str(r.ledger.duplicates if r.ledger else None),
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
    blocks.append(("table", ["run", "endpoint", "requests", "rate", "failed (of its requests)", "timed out",
                             "retries", "p50", "p95",
                             "p99"], endpoint_rows))
    blocks.append(("table", ["run", "deployment", "restarts", "OOM kills", "heap max (one replica)", "GC pauses",
                             "CPU (cores, mean)"], [
        [point_text(r_run) or str(r_run.index), name, str(d.restarts), str(d.oom_kills),
         value_text(d.heap_max_bytes, "bytes"), format_seconds(d.gc_seconds),
         "-" if d.cpu_cores is None else f"{d.cpu_cores:.2f}"]
        for r_run in result.runs if r_run.results for name, d in r_run.results.deployments.items()]))
    scaling_rows = [
        [point_text(r_run) or str(r_run.index), name, d.scaling.autoscaler or "none",
         f"{d.replicas_min or 0:g}-{d.replicas_max or 0:g}", value_text(d.scaling.replica_seconds),
         str(d.scaling.replica_changes), format_seconds(d.scaling.scale_up_lag_seconds),
         format_seconds(d.scaling.scale_down_seconds)]
        for r_run in result.runs if r_run.results for name, d in r_run.results.deployments.items() if d.scaling]
    if scaling_rows:
        blocks.append(("table", ["run", "deployment", "autoscaler", "ready replicas", "replica-seconds",
                                 "replica changes", "scale-up lag", "scale-down"], scaling_rows))
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
                            f" This is the machine of the last suite; a case whose run line names no CPU ran in an"
                            f" earlier suite, on a machine its run.json does not record."
                            f" Each case says how busy the machine was when it ran. Local mode: {cores}"))
    blocks.append(("h", 2, "The rules"))
    blocks.append(("p", "Each answer names the rule that made it. The rules before any other decide whether a run"
                        " can answer at all; then the rule of the case's kind (`finding.kind` in study.yaml) reads"
                        " the one measurement that answers its question. A figure a rule needs that the run did not"
                        " record makes the answer \"Cannot tell\", naming what is missing. A queue's depth is given as"
                        " its peak, its steady state and its trend over the load's last third, the transient of the"
                        " load's first third (at most a minute) set apart (elves.engine.results.depth); beside the"
                        " study's steady state it stands only from a run as long as the study's or one whose queue"
                        " was flat at the load's end. Every share of failed requests is over all requests unless it"
                        " names an endpoint (then over that endpoint's)."))
    blocks.append(("table", ["rule", "what it says"], [[f"`{rule}`", rule_text(rule)]
                                                         for rule in [*STANDING_RULES, *RULES]]))
    rerun = rerun_rows(ran)
    if rerun:
        blocks.append(("h", 2, "What needs a rerun"))
        blocks.append(("p", "The cases whose run cannot answer, or whose depth cannot stand beside the study's steady"
                            " state, and the rule that says so (their full answers are below)."))
        blocks.append(("table", ["case", "outcome", "rule", "why"], rerun))
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
    by_id = {r.case.id: r for r in results}
    for result in results:
        result.baseline = by_id.get(result.case.finding.baseline or "")
    blocks = page_blocks(results, read_json(directory / MACHINE_FILE))
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(markdown(blocks), encoding="utf-8")
    twin = page.with_suffix(".html")
    twin.write_text(html(blocks), encoding="utf-8")
    return [page, twin]
