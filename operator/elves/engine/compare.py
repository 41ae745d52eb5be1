"""Two runs compared: every figure their summaries share, its change, and the thresholds of a CI gate.

`elves compare BASELINE NEW` reads two summary.json files (or report directories), the
earlier first, and lists each shared figure of each run (the total, every endpoint, queue
and deployment, the ledger) with its change. Thresholds (`--fail-on`) say which changes
fail the comparison:

    p99:+10%        the p99 latency rose by more than 10 %
    rate:-5%        the request rate fell by more than 5 %
    errors:+0.5pp   the share of failed requests rose by more than 0.5 percentage points
    restarts:+1     restarts rose by more than 1
    lost:0          the new run lost more than 0 (a ceiling on the new value, no sign)
    p99:250ms       a ceiling may be a duration for the latency figures
    p99{getData}:+20%   only the getData endpoint; {*} every scope that has the figure

Without a selector a threshold applies to the total when the figure has one, else to every
queue / deployment. The defaults (no --fail-on): p99:+10%, errors:+0.5pp, lost:0.
"""

from __future__ import annotations

import json
import re
from html import escape
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterator, get_args, get_origin

from pydantic import BaseModel, ValidationError

from elves.engine.report.html import _fmt as report_value
from elves.engine.report.html import _table as report_table
from elves.engine.status import Check, LoadTestStatus, RunResults
from elves.engine.units import parse_duration

DEFAULT_THRESHOLDS = "p99:+10%,errors:+0.5pp,lost:0"
TOTAL, LEDGER = "total", "ledger"

# Figure name -> (kind, how to read it). Kinds: seconds, fraction (0..1), rate (per second), bytes, count.
ENDPOINT_FIGURES: dict[str, tuple[str, str]] = {
    "requests": ("count", "requests"), "rate": ("rate", "rate"), "errors": ("fraction", "error_rate"),
    "p50": ("seconds", "p50"), "p90": ("seconds", "p90"), "p95": ("seconds", "p95"),
    "p99": ("seconds", "p99"), "mean": ("seconds", "mean"), "timeouts": ("count", "timeouts"),
    "retries": ("count", "retries"),
}
RUN_FIGURES: dict[str, tuple[str, str]] = {
    "dropped": ("count", "dropped_iterations"), "drain": ("seconds", "drain_seconds"),
    "throughput": ("rate", "throughput"), "stability": ("count", "throughput_stability"),
}
QUEUE_FIGURES: dict[str, tuple[str, str]] = {"depth_max": ("count", "max"), "depth_final": ("count", "final")}
DEPLOYMENT_FIGURES: dict[str, tuple[str, str]] = {
    "restarts": ("count", "restarts"), "oom_kills": ("count", "oom_kills"), "replicas_max": ("count", "replicas_max"),
    "unready": ("seconds", "unready_seconds"),
    "heap_max": ("bytes", "heap_max_bytes"), "gc": ("seconds", "gc_seconds"), "cpu_cores": ("count", "cpu_cores"),
}
LEDGER_FIGURES: dict[str, tuple[str, str]] = {
    "lost": ("count", ""), "lost_requests": ("count", "lost_requests"), "lost_logs": ("count", "lost_logs"),
    "duplicates": ("count", "duplicates"),
}
FIGURES = {**ENDPOINT_FIGURES, **RUN_FIGURES, **QUEUE_FIGURES, **DEPLOYMENT_FIGURES, **LEDGER_FIGURES}
TOTAL_FIGURES = set(ENDPOINT_FIGURES) | set(RUN_FIGURES) | set(LEDGER_FIGURES)  # where a bare name points


class CompareError(ValueError):
    """An unreadable summary or a bad threshold; the CLI exits 2 with this message."""


@dataclass(frozen=True)
class Row:
    run: str  # "" for a single run, else "run 1 (system.replicas.ingestor=3)"
    scope: str  # "total", "endpoint getData", "queue elves.ingestor.data.in", "deployment ingestor", "ledger"
    figure: str
    kind: str
    baseline: float | None
    new: float | None

    @property
    def selector(self) -> str:
        return self.scope.split(" ", 1)[1] if " " in self.scope else self.scope

    @property
    def percent(self) -> float | None:
        if self.baseline is None or self.new is None:
            return None
        if self.baseline == 0:
            return 0.0 if self.new == 0 else None  # no finite change from nothing
        return (self.new - self.baseline) / abs(self.baseline) * 100


@dataclass(frozen=True)
class Threshold:
    figure: str
    selector: str | None  # None: the default scope; "*": every scope
    mode: str  # percent | points | absolute | ceiling
    limit: float  # signed for percent/points/absolute: +10 rise, -10 fall
    text: str

    def applies(self, row: Row) -> bool:
        if row.figure != self.figure:
            return False
        if self.selector == "*":
            return True
        if self.selector is None:
            return row.scope in (TOTAL, LEDGER) if self.figure in TOTAL_FIGURES else True
        return row.selector == self.selector and row.scope not in (TOTAL, LEDGER)

    def crossed(self, row: Row) -> bool:
        new, base = row.new, row.baseline
        if new is None:
            return False
        if self.mode == "ceiling":
            return new > self.limit
        if base is None:
            return False
        if self.mode == "percent":
            if base == 0:
                return (new > 0) if self.limit > 0 else False  # any rise from zero is an unbounded rise
            change = (new - base) / abs(base) * 100
        elif self.mode == "points":
            change = (new - base) * 100
        else:
            change = new - base
        return change > self.limit if self.limit >= 0 else change < self.limit


@dataclass
class Comparison:
    baseline: str
    new: str
    rows: list[Row]
    thresholds: list[Threshold]
    breaches: list[tuple[Threshold, Row]] = field(default_factory=list)
    unmatched: list[Threshold] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.breaches


# --- thresholds ---------------------------------------------------------------------

_THRESHOLD = re.compile(r"^(?P<figure>[a-z_0-9]+)(\{(?P<selector>[^{}]+)\})?:(?P<value>\S+)$")


def parse_thresholds(text: str | None) -> list[Threshold]:
    """`p99:+10%,errors:+0.5pp,lost:0` as thresholds; CompareError naming the bad part."""
    thresholds = []
    for part in (p.strip() for p in (text if text is not None else DEFAULT_THRESHOLDS).split(",")):
        if not part:
            continue
        match = _THRESHOLD.match(part)
        if match is None:
            raise CompareError(f"threshold {part!r}: write FIGURE[{{SELECTOR}}]:VALUE, e.g. p99:+10%")
        figure, value = match["figure"], match["value"]
        if figure not in FIGURES:
            raise CompareError(f"threshold {part!r}: unknown figure {figure!r}; known: {', '.join(FIGURES)}")
        kind = FIGURES[figure][0]
        number = re.fullmatch(r"([+-])?([0-9]+(?:\.[0-9]+)?)(%|pp)?", value)
        if number is None:
            if kind != "seconds":
                raise CompareError(f"threshold {part!r}: {value!r} is not +N%, -N%, +Npp, +N or a ceiling N")
            try:
                limit = parse_duration(value)
            except ValueError as exc:
                raise CompareError(f"threshold {part!r}: {exc}") from None
            thresholds.append(Threshold(figure, match["selector"], "ceiling", limit, part))
            continue
        sign, amount, unit = number.groups()
        if unit and not sign:
            raise CompareError(f"threshold {part!r}: say +{amount}{unit} (a rise) or -{amount}{unit} (a fall)")
        if unit == "pp" and kind != "fraction":
            raise CompareError(f"threshold {part!r}: percentage points (pp) apply to errors only")
        mode = {"%": "percent", "pp": "points"}.get(unit or "", "absolute" if sign else "ceiling")
        limit = float(amount) * (-1 if sign == "-" else 1)
        thresholds.append(Threshold(figure, match["selector"], mode, limit, part))
    return thresholds


# --- reading summaries --------------------------------------------------------------

def load_summary(path: Path) -> dict[str, Any]:
    """A summary.json, given itself or its report directory."""
    file = path / "summary.json" if path.is_dir() else path
    try:
        summary = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CompareError(f"{file} not found: give a summary.json or a report directory") from None
    except json.JSONDecodeError as exc:
        raise CompareError(f"{file} is not JSON: {exc}") from None
    if not isinstance(summary, dict) or "status" not in summary:
        raise CompareError(f"{file} is not an Elves summary (no status)")
    return summary


def _model_of(annotation: Any) -> tuple[str, type[BaseModel]] | None:
    """("one" | "list" | "dict", model) when a field holds models, else None."""
    origin, args = get_origin(annotation), get_args(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "one", annotation
    if origin in (list, dict) and args and isinstance(args[-1], type) and issubclass(args[-1], BaseModel):
        return ("list" if origin is list else "dict"), args[-1]
    for arg in args:  # X | None
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return "one", arg
    return None


def known_fields(model: type[BaseModel], data: Any) -> Any:
    """`data` without the keys `model` does not know, at every depth: a summary written by
    another version of Elves (a baseline from last month) still reads; what the two versions
    share is compared, the rest is left out."""
    if not isinstance(data, dict):
        return data
    kept = {}
    for name, field_info in model.model_fields.items():
        key = field_info.alias or name
        if key not in data:
            continue
        value, nested = data[key], _model_of(field_info.annotation)
        if nested is not None:
            shape, inner = nested
            if shape == "list" and isinstance(value, list):
                value = [known_fields(inner, v) for v in value]
            elif shape == "dict" and isinstance(value, dict):
                value = {k: known_fields(inner, v) for k, v in value.items()}
            elif shape == "one":
                value = known_fields(inner, value)
        kept[key] = value
    return kept


def summary_status(summary: dict[str, Any]) -> LoadTestStatus:
    """The status of a summary.json, read leniently (see known_fields); CompareError when even
    that fails."""
    try:
        return LoadTestStatus.model_validate(known_fields(LoadTestStatus, summary.get("status", {})))
    except ValidationError as exc:
        raise CompareError(f"the summary's status is unusable: {str(exc).splitlines()[0]}") from None


def summary_label(summary: dict[str, Any], path: Path) -> str:
    name = summary.get("loadtest", {}).get("metadata", {}).get("name", path.name)
    return f"{name} ({summary.get('generatedAt', '?')})"


def run_results(status: LoadTestStatus) -> list[tuple[str, RunResults]]:
    """(label, results) of every run that has results; one unlabelled entry for a single run."""
    runs = [(run, run.results) for run in status.runs if run.results is not None]
    if not runs:
        return [("", status.results)] if status.results is not None else []
    if len(status.runs) == 1:
        return [("", runs[0][1])]
    return [(f"run {run.index}" + (" (" + ", ".join(f"{k}={v}" for k, v in run.point.items()) + ")"
                                   if run.point else ""), results) for run, results in runs]


def _read(obj: Any, attribute: str) -> float | None:
    value = getattr(obj, attribute, None)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _scoped(prefix: str, before: dict[str, Any], after: dict[str, Any]) -> Iterator[tuple[str, Any, Any]]:
    for name in [n for n in before if n in after]:
        yield f"{prefix} {name}", before[name], after[name]


def figures(label: str, base: RunResults, new: RunResults) -> list[Row]:
    """Every figure both runs have, in a fixed order: total, endpoints, queues, deployments, ledger."""
    rows: list[Row] = []

    def add(scope: str, table: dict[str, tuple[str, str]], before: Any, after: Any) -> None:
        for name, (kind, attribute) in table.items():
            b, a = _read(before, attribute), _read(after, attribute)
            if b is not None or a is not None:
                rows.append(Row(label, scope, name, kind, b, a))

    add(TOTAL, ENDPOINT_FIGURES, base.total, new.total)
    add(TOTAL, RUN_FIGURES, base, new)
    for scope, before, after in _scoped("endpoint", base.endpoints, new.endpoints):
        add(scope, ENDPOINT_FIGURES, before, after)
    for scope, before, after in _scoped("queue", base.queues, new.queues):
        add(scope, QUEUE_FIGURES, before, after)
    for scope, before, after in _scoped("deployment", base.deployments, new.deployments):
        add(scope, DEPLOYMENT_FIGURES, before, after)
    if base.ledger is not None or new.ledger is not None:
        lost = [None if led is None else float(led.lost_requests + led.lost_logs) for led in (base.ledger, new.ledger)]
        rows.append(Row(label, LEDGER, "lost", "count", lost[0], lost[1]))
        add(LEDGER, {k: v for k, v in LEDGER_FIGURES.items() if v[1]}, base.ledger, new.ledger)
    return rows


def compare_runs(before: list[tuple[str, RunResults]], after: list[tuple[str, RunResults]],
                 thresholds: list[Threshold], names: tuple[str, str] = ("baseline", "new")) -> Comparison:
    """Runs paired in order (a sweep's points with their counterparts), figures and thresholds."""
    comparison = Comparison(names[0], names[1], [], thresholds)
    if not before or not after:
        comparison.notes.append(f"no results to compare in {names[0] if not before else names[1]}")
    if len(before) != len(after) and before and after:
        comparison.notes.append(f"{len(before)} run(s) against {len(after)}: compared the first {min(len(before), len(after))}")
    for (label, base), (other, results) in zip(before, after):
        if label != other:
            comparison.notes.append(f"{label or 'the run'} compared with {other or 'the run'}")
        comparison.rows += figures(label, base, results)
    for threshold in thresholds:
        matched = [row for row in comparison.rows if threshold.applies(row)]
        if not matched:
            comparison.unmatched.append(threshold)
        comparison.breaches += [(threshold, row) for row in matched if threshold.crossed(row)]
    return comparison


def compare(baseline: dict[str, Any], new: dict[str, Any], thresholds: list[Threshold],
            names: tuple[str, str] = ("baseline", "new")) -> Comparison:
    """The comparison of two summary documents (summary.json as parsed)."""
    return compare_runs(run_results(summary_status(baseline)), run_results(summary_status(new)), thresholds, names)


def baseline_checks(baseline: dict[str, Any], name: str, results: RunResults, fail_on: str | None = None) -> list[Check]:
    """A run's results against a baseline summary's last run, one verdict check per threshold
    (`spec.baseline`: a CI gate against regressions). A threshold that matches no figure fails:
    a gate that cannot look must not pass."""
    before = run_results(summary_status(baseline))
    comparison = compare_runs(before[-1:], [("", results)] if before else [], parse_thresholds(fail_on),
                              (name, "this run"))
    if before:
        comparison.rows = [replace(row, run="") for row in comparison.rows]
    checks = []
    for threshold in comparison.thresholds:
        rows = [row for row in comparison.rows if threshold.applies(row)]
        crossed = [row for t, row in comparison.breaches if t is threshold]
        shown = (crossed or rows or [None])[0]
        detail = (f"{shown.scope} {shown.figure}: {format_value(shown.kind, shown.baseline)} in {name},"
                  f" {format_value(shown.kind, shown.new)} now ({change_text(shown)})" if shown else
                  f"no such figure in both {name} and this run")
        checks.append(Check(name=f"baseline {threshold.text}", observed=shown.new if shown else None,
                            target=f"no worse than {name} by {threshold.text.split(':', 1)[1]}",
                            ok=bool(rows) and not crossed, detail=detail))
    return checks


def compare_paths(baseline: Path, new: Path, fail_on: str | None = None) -> Comparison:
    thresholds = parse_thresholds(fail_on)
    first, second = load_summary(baseline), load_summary(new)
    return compare(first, second, thresholds, (summary_label(first, baseline), summary_label(second, new)))


# --- presenting ---------------------------------------------------------------------

def format_value(kind: str, value: float | None) -> str:
    """A figure in its unit, as the report writes it."""
    return report_value(value, {"fraction": "percent", "count": "number"}.get(kind, kind))


def change_text(row: Row) -> str:
    if row.baseline is None or row.new is None:
        return "only in " + ("new" if row.baseline is None else "baseline")
    if row.new == row.baseline:
        return "="
    if row.kind == "fraction":
        return f"{(row.new - row.baseline) * 100:+.2f} pp"
    percent = row.percent
    if percent is None:
        return f"{row.new - row.baseline:+g} (from 0)"
    return f"{percent:+.1f} %"


def table_rows(comparison: Comparison) -> list[list[str]]:
    crossed: dict[int, list[str]] = {}
    for threshold, row in comparison.breaches:
        crossed.setdefault(id(row), []).append(threshold.text)
    return [[row.run, row.scope, row.figure, format_value(row.kind, row.baseline), format_value(row.kind, row.new),
             change_text(row), "CROSSED " + ", ".join(crossed[id(row)]) if id(row) in crossed else ""]
            for row in comparison.rows]


HEADERS = ["run", "scope", "figure", "baseline", "new", "change", "threshold"]


def text_lines(comparison: Comparison) -> list[str]:
    """The terminal table and the outcome, one string per line."""
    rows = table_rows(comparison)
    keep = [i for i, header in enumerate(HEADERS) if header != "run" or any(r[0] for r in rows)]
    widths = [max([len(HEADERS[i])] + [len(r[i]) for r in rows]) for i in keep]
    lines = [f"baseline: {comparison.baseline}", f"new:      {comparison.new}", ""]
    for cells in [HEADERS] + rows:
        lines.append("  ".join(cells[i].ljust(w) for i, w in zip(keep, widths)).rstrip())
    lines.append("")
    lines += [f"note: {note}" for note in comparison.notes]
    lines += [f"note: threshold {t.text} matched no figure of these runs" for t in comparison.unmatched]
    used = ", ".join(t.text for t in comparison.thresholds) or "none"
    if comparison.passed:
        lines.append(f"No threshold crossed ({used}).")
    else:
        crossed = sorted({t.text for t, _ in comparison.breaches})
        lines.append(f"{len(comparison.breaches)} figure(s) crossed a threshold: {', '.join(crossed)} (of {used}).")
    return lines


def html_section(comparison: Comparison, title: str = "Compared with the baseline") -> str:
    """An HTML section for a report page (the report's CSS classes)."""
    rows = [[escape(c) for c in cells[:-1]] + [f"<span class='bad'>{escape(cells[-1])}</span>" if cells[-1] else ""]
            for cells in table_rows(comparison)]
    outcome = ("<p class='ok'>No threshold crossed.</p>" if comparison.passed else
               f"<p class='bad'>{len(comparison.breaches)} figure(s) crossed a threshold.</p>")
    notes = "".join(f"<p class='muted'>{escape(n)}</p>" for n in comparison.notes)
    return (f"<h2>{escape(title)}</h2><p class='muted'>baseline {escape(comparison.baseline)} · new "
            f"{escape(comparison.new)} · thresholds {escape(', '.join(t.text for t in comparison.thresholds))}</p>"
            + outcome + notes + report_table(HEADERS, rows))

