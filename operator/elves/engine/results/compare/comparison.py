"""Two runs compared under the gate's rules: `elves compare` and `spec.baseline` (the gate a
run applies to itself) judge the same way.

The outcome is 0 only when the new run is as good as its baseline by every rule; 1 when a
figure crossed a rule or is missing, or the new run ended Failed (never as good, whatever the
baseline); 2 when nothing can be compared, each reason named: a side without a run that has
results, one that ended in Error or is unfinished, a LoadTest of another shape, a run whose
load the generator limited (its figures are k6's, not the system's), a run from a busy or a
saturated machine (inconclusive, standing.py), plans that differ (plans.py: unless the user
allowed the change), or a rule the user wrote that watches nothing. An endpoint with too few
requests for a rule is judged by the rule's small-sample form (small.py) or, with fewer still,
named as not judged.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from elves.engine.models.figure_table import VERDICT, Figures, Row
from elves.engine.models.status import Check, RunResults
from elves.engine.models.thresholds import CompareError
from elves.engine.models.thresholds import Threshold, parse_thresholds, too_few_text, watching
from elves.engine.results.compare.figures import change_text, format_value, rows, run_figures
from elves.engine.results.compare.plans import allows, parse_allowed, plan_differences, unknown_allowed, ALLOW_HELP
from elves.engine.results.compare.small import Judgement, small_sample
from elves.engine.results.compare.standing import ended_reasons, failed_reasons, limited_reasons, machine_reasons
from elves.engine.results.compare.summaries import RunView, Side, load_summary, side, summary_label, summary_status

PASSED, BREACHED, INCOMPARABLE = 0, 1, 2


@dataclass(frozen=True)
class Breach:
    threshold: Threshold
    row: Row
    kind: str  # "crossed" | "missing"
    small: Judgement | None = None  # crossed by the rule's small-sample form: how


@dataclass(frozen=True)
class Line:
    """A row of the table with the rules that watch it and what they found."""

    row: Row
    rules: list[Threshold]
    breaches: list[Breach]
    too_few: dict[int, float] = field(default_factory=dict)  # id of a rule -> the requests short of its n
    small: dict[int, Judgement] = field(default_factory=dict)  # id of a rule -> its small-sample judgement

    def judged_by(self, threshold: Threshold) -> bool:
        """Whether `threshold` watches this row and had what it needs to judge it (by itself or
        in its small-sample form)."""
        watches = threshold.mode != "off" and any(t is threshold for t in self.rules)
        return watches and (id(threshold) not in self.too_few or id(threshold) in self.small)

    def unjudged(self, threshold: Threshold) -> bool:
        """The rule watches this endpoint's figure, but too few requests left it no way to judge."""
        return id(threshold) in self.too_few and id(threshold) not in self.small


@dataclass
class Comparison:
    baseline: str
    new: str
    thresholds: list[Threshold]
    lines: list[Line] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # why nothing could be compared, each named
    failed: list[str] = field(default_factory=list)  # why the new run ended Failed: never as good
    notes: list[str] = field(default_factory=list)

    @property
    def problem(self) -> str | None:
        """The first reason nothing could be compared (None: comparable)."""
        return self.problems[0] if self.problems else None

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
        if self.problems or self.blind:
            return INCOMPARABLE
        return BREACHED if self.breaches or self.failed else PASSED

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


def _lines(label: str, before: Figures, after: Figures, thresholds: list[Threshold]) -> list[Line]:
    lines = []
    for row in rows(label, before, after):
        rules = watching(thresholds, row)
        too_few = {id(t): n for t in rules if (n := t.too_few(row)) is not None}
        small = {id(t): judgement for t in rules
                 if id(t) in too_few and (judgement := small_sample(t, row, before, after)) is not None}
        breaches = [Breach(t, row, kind) for t in rules
                    if id(t) not in too_few and (kind := t.judge(row)) is not None]
        breaches += [Breach(t, row, "crossed", small[id(t)]) for t in rules if id(t) in small and small[id(t)].crossed]
        lines.append(Line(row, rules, breaches, too_few, small))
    return lines


def compare_runs(before: Side, after: Side, thresholds: list[Threshold]) -> Comparison:
    """Each run of `after` against its counterpart in `before` (a sweep point by point); a run
    of `after` that ended Failed is named in `failed`."""
    comparison = Comparison(before.name or before.role, after.name or after.role, thresholds)
    shape = _shape_problem(before, after)
    if shape is not None:
        comparison.problems.append(shape)
        return comparison
    for b, a in zip(before.runs, after.runs):
        comparison.lines += _lines(b.label, run_figures(b.results, b.verdict), run_figures(a.results, a.verdict),
                                   thresholds)
        if reasons := failed_reasons(after, a):
            where = f"{a.label} of {after.called}" if a.label else after.called
            comparison.failed.append(f"{where} ended Failed ({'; '.join(reasons)}): a failed run is never as good"
                                     " as its baseline")
    comparison.notes += [f"rule {t.text} watches no figure of either run" for t in comparison.unmatched if not t.given]
    return comparison


def standing_problems(before: Side, after: Side, summaries: tuple[dict[str, Any], dict[str, Any]]) -> list[str]:
    """Why either side cannot stand in a comparison: how it ended, its generator's limits, its machine."""
    found: list[str] = []
    for one, summary in zip((before, after), summaries):
        # A side without results is named by the shape check already (_shape_problem).
        found += (ended_reasons(one) if one.measured else []) + limited_reasons(one) + machine_reasons(one, summary)
    return found


def plan_problems(baseline: dict[str, Any], new: dict[str, Any], allowed: list[str],
                  notes: list[str] | None = None, new_role: str = "the new run", hint: str = "") -> list[str]:
    """Each difference of the two plans not `allowed`, as a reason to refuse (with `hint`, else
    how to allow it); the allowed ones go to `notes` (said, not hidden)."""
    if unknown := unknown_allowed(allowed, baseline, new):
        raise CompareError(f"--allow-plan-change {','.join(unknown)}: no such field in either plan ({ALLOW_HELP})")
    found = []
    for difference in plan_differences(baseline, new):
        if allows(allowed, difference.path):
            if notes is not None:
                notes.append(f"plan changed, as allowed: {difference.text(new_role)}")
        else:
            found.append(f"the plans differ: {difference.text(new_role)} ("
                         + (hint or "compare runs of one plan, or say the change is the point:"
                                    f" --allow-plan-change {difference.path}") + ")")
    return found


def compare(baseline: dict[str, Any], new: dict[str, Any], thresholds: list[Threshold],
            names: tuple[str, str] = ("", ""), allow_plan_change: str | None = None) -> Comparison:
    """The comparison of two summary documents (summary.json as parsed, with the run.json found
    beside it), named `names` (their LoadTest and date) in what it says. The figures are still
    shown when the runs cannot be compared; none is then judged."""
    before = side(summary_status(baseline), names[0], "the baseline")
    after = side(summary_status(new), names[1], "the new run")
    comparison = compare_runs(before, after, thresholds)
    comparison.problems += standing_problems(before, after, (baseline, new))
    comparison.problems += plan_problems(baseline, new, parse_allowed(allow_plan_change), comparison.notes)
    return comparison


def compare_paths(baseline: Path, new: Path, fail_on: str | None = None,
                  allow_plan_change: str | None = None) -> Comparison:
    thresholds = parse_thresholds(fail_on)
    first, second = load_summary(baseline), load_summary(new)
    return compare(first, second, thresholds, (summary_label(first, baseline), summary_label(second, new)),
                   allow_plan_change)


def baseline_checks(baseline: dict[str, Any], name: str, results: RunResults, fail_on: str | None = None,
                    run_index: int | None = None, plan: dict[str, Any] | None = None) -> list[Check]:
    """A run's results against a run of the baseline summary, one verdict check per rule
    (`spec.baseline`: the run's own gate against regressions): its run `run_index` (a sweep's
    counterpart), else its last run with results. The verdict rule is left out: the run's
    objectives already decide its verdict. A baseline with nothing to compare (no results, its
    load limited, a busy or saturated machine, or, given this run's `plan` (a summary document
    without a status: summary_document's loadtest and plan), a plan of its own), or a rule of the
    user's that watches nothing, is a failed check that says why."""
    thresholds = [t for t in parse_thresholds(fail_on) if t.figure != VERDICT]
    earlier = side(summary_status(baseline), name, "the baseline")
    if run_index is None:
        measured = earlier.measured[-1:]
        missing = f"{earlier.called} has no run with results ({earlier.state})"
    else:
        measured = [r for r in earlier.runs[run_index:run_index + 1] if r.results is not None]
        missing = f"run {run_index} of {earlier.called} has no results ({earlier.state})"
    single = len(earlier.runs) == 1
    chosen = Side(name, measured[:1], earlier.state, earlier.role, earlier.phase if single else "",
                  earlier.conditions if single else {})
    refused = [Check(name="baseline", target=f"a run of {name} with the load it asked for, on a quiet machine",
                     ok=False, detail=f"nothing to compare: {reason}")
               for reason in limited_reasons(chosen) + machine_reasons(chosen, baseline)]
    if plan is not None:
        refused += [Check(name="baseline plan", target=f"the plan of {name}", ok=False, detail=reason)
                    for reason in plan_problems(baseline, plan, [], new_role="this run",
                                                hint="spec.baseline compares runs of one plan: name a report of it")]
    if refused:
        return refused
    if not measured:
        return [Check(name="baseline", target=f"a run with results in {name}", ok=False,
                      detail=f"nothing to compare: {missing}")]
    before = Side(name, [replace(measured[0], label="", point={}, verdict=None)])
    comparison = compare_runs(before, Side("this run", [RunView("", {}, results, None)]), thresholds)
    checks = []
    for threshold in (t for t in thresholds if t.mode != "off"):
        watched = [line.row for line in comparison.lines if line.judged_by(threshold)]
        unjudged = [line for line in comparison.lines if line.unjudged(threshold)]
        if not watched and not threshold.given:
            continue  # a default rule for a figure neither run has: nothing can have got worse
        crossed = [b for b in comparison.breaches if b.threshold is threshold]
        shown = crossed[0].row if crossed else (watched or [None])[0]
        not_judged = "; ".join(f"{line.row.scope} {line.row.figure}: {too_few_text(line.too_few[id(threshold)])}"
                               for line in unjudged)
        if shown is None and unjudged:
            detail = not_judged
        elif shown is None:
            detail = f"no such figure in {name} or this run"
        else:
            now = ("missing now" if shown.missing else
                   f"{format_value(shown.kind, shown.new)} now ({change_text(shown)})")
            detail = (f"{shown.scope} {shown.figure}: " + (crossed[0].small.text if crossed and crossed[0].small else
                                                          f"{format_value(shown.kind, shown.baseline)} in {name}, {now}")
                      + (f"; {len(crossed) - 1} more" if len(crossed) > 1 else "")
                      + (f"; not judged: {not_judged}" if not_judged else ""))
        checks.append(Check(name=f"baseline {threshold.text}", observed=shown.new if shown else None,
                            target=f"{threshold.target_text()} against {name}",
                            ok=bool(watched) and not crossed, detail=detail))
    return checks
