"""Two runs compared under the gate's rules: `elves compare` and `spec.baseline` (the gate a
run applies to itself) judge the same way.

The outcome is 0 only when the new run is as good as its baseline by every rule; 1 when a
figure crossed a rule or is missing; 2 when nothing can be compared (a side without a run
that has results, a LoadTest of another shape, a run whose load the generator limited: its
figures are k6's, not the system's) or a rule the user wrote watches nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from elves.engine.compare.figures import VERDICT, Row, change_text, format_value, rows, run_figures
from elves.engine.compare.rules import Threshold, parse_thresholds, too_few_text, watching
from elves.engine.compare.summaries import RunView, Side, load_summary, side, summary_label, summary_status
from elves.engine.generator_limit import judged_limits
from elves.engine.status import Check, RunResults

PASSED, BREACHED, INCOMPARABLE = 0, 1, 2


@dataclass(frozen=True)
class Breach:
    threshold: Threshold
    row: Row
    kind: str  # "crossed" | "missing"


@dataclass(frozen=True)
class Line:
    """A row of the table with the rules that watch it and what they found."""

    row: Row
    rules: list[Threshold]
    breaches: list[Breach]
    too_few: dict[int, float] = field(default_factory=dict)  # id of a rule -> the requests short of its n

    def judged_by(self, threshold: Threshold) -> bool:
        """Whether `threshold` watches this row and had what it needs to judge it."""
        watches = threshold.mode != "off" and any(t is threshold for t in self.rules)
        return watches and id(threshold) not in self.too_few


@dataclass
class Comparison:
    baseline: str
    new: str
    thresholds: list[Threshold]
    lines: list[Line] = field(default_factory=list)
    problem: str | None = None  # why nothing could be compared
    notes: list[str] = field(default_factory=list)

    @property
    def rows(self) -> list[Row]:
        return [line.row for line in self.lines]

    @property
    def breaches(self) -> list[Breach]:
        return [b for line in self.lines for b in line.breaches]

    @property
    def unmatched(self) -> list[Threshold]:
        """Rules (not `off`) that watch no row of either run."""
        used = {id(t) for line in self.lines for t in line.rules}
        return [t for t in self.thresholds if t.mode != "off" and id(t) not in used]

    @property
    def blind(self) -> list[Threshold]:
        """Rules the user wrote that judge nothing (no figure, or endpoints with too few requests):
        a gate the user asked for cannot look."""
        return [t for t in self.thresholds
                if t.given and t.mode != "off" and not any(line.judged_by(t) for line in self.lines)]

    @property
    def outcome(self) -> int:
        if self.problem is not None or self.blind:
            return INCOMPARABLE
        return BREACHED if self.breaches else PASSED

    @property
    def passed(self) -> bool:
        return self.outcome == PASSED


def _shape_problem(before: Side, after: Side) -> str | None:
    """Why the two sides cannot be compared, or None."""
    for one in (before, after):
        if not one.measured:
            return f"{one.called} has no run with results ({one.state or 'no status'})"
    if len(before.runs) != len(after.runs):
        return (f"{before.role or before.name} has {len(before.runs)} run(s), {after.role or after.name}"
                f" {len(after.runs)}: not the same LoadTest (compare runs of one sweep)")
    for index, (b, a) in enumerate(zip(before.runs, after.runs)):
        if b.point != a.point:
            return (f"run {index} swept {b.point} in {before.role or before.name} and {a.point} in"
                    f" {after.role or after.name}: not the same LoadTest")
    return None


def _limited_problem(one: Side) -> str | None:
    """Why a side's figures are not the system's: its load generator limited a run's load."""
    for run in one.measured:
        limits = judged_limits(run.results, run.verdict) if run.results is not None else []
        if limits:
            where = f"{run.label} of {one.called}" if run.label else one.called
            return f"{where} was limited by its load generator, not the system, so its figures are k6's: {'; '.join(limits)}"
    return None


def compare_runs(before: Side, after: Side, thresholds: list[Threshold]) -> Comparison:
    """Each run of `after` against its counterpart in `before` (a sweep point by point)."""
    comparison = Comparison(before.name or before.role, after.name or after.role, thresholds)
    comparison.problem = _shape_problem(before, after)
    if comparison.problem is not None:
        return comparison
    for b, a in zip(before.runs, after.runs):
        for row in rows(b.label, run_figures(b.results, b.verdict), run_figures(a.results, a.verdict)):
            rules = watching(thresholds, row)
            too_few = {id(t): n for t in rules if (n := t.too_few(row)) is not None}
            breaches = [Breach(t, row, kind) for t in rules
                        if id(t) not in too_few and (kind := t.judge(row)) is not None]
            comparison.lines.append(Line(row, rules, breaches, too_few))
    comparison.notes += [f"rule {t.text} watches no figure of either run" for t in comparison.unmatched if not t.given]
    return comparison


def compare(baseline: dict[str, Any], new: dict[str, Any], thresholds: list[Threshold],
            names: tuple[str, str] = ("", "")) -> Comparison:
    """The comparison of two summary documents (summary.json as parsed), named `names` (their
    LoadTest and date) in what it says."""
    before = side(summary_status(baseline), names[0], "the baseline")
    after = side(summary_status(new), names[1], "the new run")
    comparison = compare_runs(before, after, thresholds)
    # The figures are still shown; none is judged as the system's.
    comparison.problem = comparison.problem or _limited_problem(before) or _limited_problem(after)
    return comparison


def compare_paths(baseline: Path, new: Path, fail_on: str | None = None) -> Comparison:
    thresholds = parse_thresholds(fail_on)
    first, second = load_summary(baseline), load_summary(new)
    return compare(first, second, thresholds, (summary_label(first, baseline), summary_label(second, new)))


def baseline_checks(baseline: dict[str, Any], name: str, results: RunResults, fail_on: str | None = None,
                    run_index: int | None = None) -> list[Check]:
    """A run's results against a run of the baseline summary, one verdict check per rule
    (`spec.baseline`: the run's own gate against regressions): its run `run_index` (a sweep's
    counterpart), else its last run with results. The verdict rule is left out: the run's
    objectives already decide its verdict. A baseline with nothing to compare, or a rule of the
    user's that watches nothing, is a failed check."""
    thresholds = [t for t in parse_thresholds(fail_on) if t.figure != VERDICT]
    earlier = side(summary_status(baseline), name, "the baseline")
    if run_index is None:
        measured = earlier.measured[-1:]
        missing = f"{earlier.called} has no run with results ({earlier.state})"
    else:
        measured = [r for r in earlier.runs[run_index:run_index + 1] if r.results is not None]
        missing = f"run {run_index} of {earlier.called} has no results ({earlier.state})"
    limited = _limited_problem(Side(name, measured[:1], earlier.state, earlier.role))
    if limited:
        return [Check(name="baseline", target=f"a run of {name} with the load it asked for", ok=False,
                      detail=f"nothing to compare: {limited}")]
    if not measured:
        return [Check(name="baseline", target=f"a run with results in {name}", ok=False,
                      detail=f"nothing to compare: {missing}")]
    before = Side(name, [replace(measured[0], label="", point={}, verdict=None)])
    comparison = compare_runs(before, Side("this run", [RunView("", {}, results, None)]), thresholds)
    checks = []
    for threshold in (t for t in thresholds if t.mode != "off"):
        watched = [line.row for line in comparison.lines if line.judged_by(threshold)]
        skipped = [line for line in comparison.lines if id(threshold) in line.too_few]
        if not watched and not threshold.given:
            continue  # a default rule for a figure neither run has: nothing can have got worse
        crossed = [b for b in comparison.breaches if b.threshold is threshold]
        shown = crossed[0].row if crossed else (watched or [None])[0]
        if shown is None and skipped:
            detail = "; ".join(f"{line.row.scope} {line.row.figure}: {too_few_text(line.too_few[id(threshold)])}"
                               for line in skipped)
        elif shown is None:
            detail = f"no such figure in {name} or this run"
        else:
            now = ("missing now" if shown.missing else
                   f"{format_value(shown.kind, shown.new)} now ({change_text(shown)})")
            detail = (f"{shown.scope} {shown.figure}: {format_value(shown.kind, shown.baseline)} in {name}, {now}"
                      + (f"; {len(crossed) - 1} more" if len(crossed) > 1 else ""))
        checks.append(Check(name=f"baseline {threshold.text}", observed=shown.new if shown else None,
                            target=f"{threshold.target_text()} against {name}",
                            ok=bool(watched) and not crossed, detail=detail))
    return checks
