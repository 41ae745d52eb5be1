"""A comparison for people: the terminal table and outcome of `elves compare`, and an HTML
section in the report's style."""

from __future__ import annotations

from html import escape

from elves.engine.models.figure_table import PRESENT
from elves.engine.models.thresholds import Threshold, too_few_text
from elves.engine.results.compare.comparison import BREACHED, PASSED, Breach, Comparison, Line
from elves.engine.results.compare.figures import change_text, format_value
from elves.engine.results.compare.small import MIN_REQUESTS
from elves.engine.results.format import html_table, text_table

HEADERS = ["run", "scope", "figure", "baseline", "new", "change", "rule", "result"]
NOT_JUDGED = "not judged"
RESULT_CLASS = {"ok": "ok", NOT_JUDGED: "muted"}  # the report's CSS class of a result; any other is bad
FIGURE_COLUMNS = (3, 4, 5)


def _result(line: Line) -> str:
    kinds = {b.kind for b in line.breaches}
    if kinds:
        return "MISSING" if "missing" in kinds else "CROSSED"
    if any(line.unjudged(t) for t in line.rules):
        return NOT_JUDGED
    if any(line.judged_by(t) for t in line.rules):
        return "ok"
    return ""


def _rule_note(line: Line, threshold: Threshold) -> str:
    if id(threshold) in line.small:
        return f": n={line.too_few[id(threshold)]:g}, judged by its small-sample rule"
    if id(threshold) in line.too_few:
        return f": {too_few_text(line.too_few[id(threshold)])}"
    return ""


def _rule_cell(line: Line) -> str:
    """The rules watching a row, each with what stopped it judging the row, or how it judged a small sample."""
    return ", ".join(t.text + _rule_note(line, t) for t in line.rules)


def table_rows(comparison: Comparison) -> list[list[str]]:
    return [[line.row.run, line.row.scope, line.row.figure, format_value(line.row.kind, line.row.baseline),
             format_value(line.row.kind, line.row.new), change_text(line.row), _rule_cell(line), _result(line)]
            for line in comparison.lines]


def breach_text(breach: Breach) -> str:
    row = breach.row
    where = " ".join(part for part in (row.run, row.scope, row.figure) if part)
    if breach.small is not None:
        return (f"CROSSED {where}: {format_value(row.kind, row.baseline)} -> {format_value(row.kind, row.new)},"
                f" too few requests for rule {breach.threshold.text}; by its small-sample rule, {breach.small.text}")
    if breach.kind == "missing" and row.figure == PRESENT:
        return (f"MISSING {where.removesuffix(' ' + PRESENT)}: in the baseline, absent from the new run"
                f" (rule {breach.threshold.text})")
    if breach.kind == "missing":
        return (f"MISSING {where}: {format_value(row.kind, row.baseline)} in the baseline, none in the new run"
                f" (rule {breach.threshold.text})")
    return (f"CROSSED {where}: {format_value(row.kind, row.baseline)} -> {format_value(row.kind, row.new)}"
            f" ({change_text(row)}; rule {breach.threshold.text}: {breach.threshold.target_text()})")


def _small_lines(comparison: Comparison) -> list[str]:
    """The endpoints too small for a rule: judged by its small-sample form, or named as not judged."""
    small = [f"{' '.join(p for p in (line.row.run, line.row.scope, line.row.figure) if p)}"
             f" (n={line.too_few[id(t)]:g})" for line in comparison.lines for t in line.rules
             if id(t) in line.small and not line.small[id(t)].crossed]
    unjudged = [f"{' '.join(p for p in (line.row.run, line.row.scope, line.row.figure) if p)}"
                f" (n={line.too_few[id(t)]:g})" for line in comparison.lines for t in line.rules if line.unjudged(t)]
    return ([f"Too few requests for their rule, judged by its small-sample rule (the median against the baseline's p90; a binomial test of the failures) and kept to it: {'; '.join(small)}."] if small else []) \
        + ([f"Not judged, too few requests for any rule (fewer than {MIN_REQUESTS}, or a figure no small-sample"
            f" rule covers): {'; '.join(unjudged)}."] if unjudged else [])


def outcome_lines(comparison: Comparison) -> list[str]:
    """What the comparison concluded, the last line saying which exit code and why."""
    if comparison.problems:
        return [f"Nothing to compare: {problem}." for problem in comparison.problems]
    if comparison.blind:
        return [_blind_text(comparison, t) for t in comparison.blind]
    rules = [t for t in comparison.thresholds if t.mode != "off"]
    notes = _small_lines(comparison)
    if comparison.outcome == PASSED:
        watched = sum(1 for line in comparison.lines if any(line.judged_by(t) for t in line.rules))
        return notes + [f"As good as the baseline: {watched} figure(s) under {len(rules)} rule(s), none crossed or"
                        " missing."]
    assert comparison.outcome == BREACHED
    breaches = comparison.breaches
    missing = sum(1 for b in breaches if b.kind == "missing")
    failed = [f"FAILED {reason}." for reason in comparison.failed]
    return [breach_text(b) for b in breaches] + failed + notes + [
        f"Worse than the baseline: {len(breaches) - missing} figure(s) crossed a rule, {missing} missing"
        + (f", and {len(comparison.failed)} run(s) Failed." if comparison.failed else ".")]


def _blind_text(comparison: Comparison, threshold: Threshold) -> str:
    counts = [line.too_few[id(threshold)] for line in comparison.lines if line.unjudged(threshold)]
    if counts:
        return (f"Nothing to compare for rule {threshold.text}: every endpoint it watches made too few requests"
                f" to judge (n={min(counts):g}; :n={min(counts):g} judges them anyway).")
    return (f"Nothing to compare for rule {threshold.text}: it watches no figure of either run"
            " (check the figure and the {selector}).")


def text_lines(comparison: Comparison) -> list[str]:
    """The terminal table and the outcome, one string per line."""
    lines = [f"baseline: {comparison.baseline}", f"new:      {comparison.new}",
             "rules:    " + ", ".join(t.text for t in comparison.thresholds), ""]
    rows = table_rows(comparison)
    if rows:
        keep = [i for i in range(len(HEADERS)) if i != 0 or any(r[0] for r in rows)]
        lines += text_table([HEADERS[i] for i in keep], [[r[i] for i in keep] for r in rows],
                            right=[keep.index(i) for i in FIGURE_COLUMNS]) + [""]
    lines += [f"note: {note}" for note in comparison.notes]
    return lines + outcome_lines(comparison)


def html_section(comparison: Comparison, title: str = "Compared with the baseline") -> str:
    """An HTML section for a report page (the report's CSS classes)."""
    rows = [[escape(c) for c in cells[:-1]] +
            [f"<span class='{RESULT_CLASS.get(cells[-1], 'bad')}'>{escape(cells[-1])}</span>" if cells[-1] else ""]
            for cells in table_rows(comparison)]
    outcome = "".join(f"<p class='{'ok' if comparison.passed else 'bad'}'>{escape(line)}</p>"
                      for line in outcome_lines(comparison))
    notes = "".join(f"<p class='muted'>{escape(n)}</p>" for n in comparison.notes)
    return (f"<h2>{escape(title)}</h2><p class='muted'>baseline {escape(comparison.baseline)} · new "
            f"{escape(comparison.new)} · rules {escape(', '.join(t.text for t in comparison.thresholds))}</p>"
            + outcome + notes + (html_table(HEADERS, rows) if rows else ""))
