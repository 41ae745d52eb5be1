"""The rules of the regression gate: which change of which figure fails a comparison.

RULES_HELP says how a rule is written and DEFAULTS_HELP which rules hold when the user
writes none (`elves compare --help` prints both).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from elves.engine.compare.figures import (DEPLOYMENT_FIGURES, ENDPOINT_FIGURES, FIGURES, LEDGER_FIGURES, PRESENT,
                                          QUEUE_FIGURES, RUN_FIGURES, VERDICT, YES_NO, Row)
from elves.engine.compare.summaries import CompareError
from elves.engine.units import parse_duration

RULES_HELP = ("""\
A rule is FIGURE[{SELECTOR}]:VALUE, where VALUE is
  +10%  -10%     a rise (fall) by more than 10 % of the baseline fails; any rise from 0 is past +N%
  +0.5pp         errors only: a rise by more than 0.5 percentage points fails
  +2  -2  +0     a rise (fall) by more than 2 fails; +0: any rise fails
  0  250ms       a ceiling on the new value, whatever the baseline (a duration for latencies)
  kept           yes/no figures (verdict, present, drained): what was yes in the baseline stays yes
  off            no rule for this figure (and scope)
Without a selector a rule watches every scope that has the figure (the total, each endpoint,
queue and deployment, the ledger); {total}, {ledger} or {NAME} (an endpoint, queue or
deployment) narrows it, and a narrower rule takes the place of a wider one for its scope.
A figure the baseline has and the new run lacks (or has as NaN) breaks every rule that
watches it, as "missing": a gate that cannot look does not pass.
""" + f"""Figures, by scope ({{total}} is the run as a whole):
  the total and each endpoint  {' '.join(ENDPOINT_FIGURES)}
  the total                    {VERDICT} {' '.join(RUN_FIGURES)}
  each endpoint                {PRESENT}
  each queue                   {PRESENT} {' '.join(QUEUE_FIGURES)}
  each deployment              {PRESENT} {' '.join(DEPLOYMENT_FIGURES)}
  the ledger                   {' '.join(LEDGER_FIGURES)}
""")

DEFAULTS = (  # (rule, what it asks)
    ("verdict:kept", "a Passed run is not Failed now"),
    ("present:kept", "every endpoint, queue and deployment of the baseline is in the new run"),
    ("rate{total}:-10%", "the achieved request rate fell by at most 10 %"),
    ("p99:+10%", "the p99 latency, of the total and of every endpoint, rose by at most 10 %"),
    ("errors:+0.5pp", "the failed share, of the total and of every endpoint, rose by at most 0.5 points"),
    ("dropped:+0", "no more iterations dropped by k6"),
    ("duplicates:+0", "no more duplicate deliveries discarded"),
    ("restarts:+0", "no more restarts of any deployment"),
    ("oom_kills:+0", "no more OOM kills of any deployment"),
    ("deepest_queue:+50%", "the deepest work queue rose by at most 50 %"),
    ("drain:+50%", "the drain took at most 50 % longer"),
    ("drained:kept", "a drain that finished still finishes"),
    ("lost_requests:0", "no accepted request lost, whatever the baseline"),
    ("lost_logs:0", "no promised activity log lost, whatever the baseline"),
)
DEFAULT_THRESHOLDS = ",".join(rule for rule, _ in DEFAULTS)
DEFAULTS_HELP = ("The default rules (--fail-on adds to them, and replaces those of the figures it names):\n"
                 + "".join(f"  {rule:<20}  {what}\n" for rule, what in DEFAULTS)
                 + "Examples: --fail-on p99:+25% (a looser p99, every scope); --fail-on p99{getUser}:off;\n"
                   "--fail-on p99:250ms,restarts:off.\n")


@dataclass(frozen=True)
class Threshold:
    figure: str
    selector: str | None  # None: every scope that has the figure
    mode: str  # percent | points | absolute | ceiling | kept | off
    limit: float  # signed for percent/points/absolute: +10 a rise, -10 a fall
    text: str
    given: bool = False  # written by the user (a rule that watches nothing is then an error)

    def selects(self, row: Row) -> bool:
        return row.figure == self.figure and self.selector in (None, row.selector)

    def judge(self, row: Row) -> str | None:
        """"missing", "crossed", or None when the row keeps to the rule."""
        new, base = row.new, row.baseline
        if self.mode == "off":
            return None
        if base is None:  # nothing to hold the new run to, but a ceiling holds on its own
            return "crossed" if self.mode == "ceiling" and new is not None and new > self.limit else None
        if new is None:
            return "missing"
        if self.mode == "ceiling":
            worse = new > self.limit
        elif self.mode == "kept":
            worse = base >= 1 and new < 1
        elif self.mode == "percent" and base == 0:
            worse = new > 0 if self.limit >= 0 else False  # any rise from zero is an unbounded rise
        else:
            if self.mode == "percent":
                change = (new - base) / abs(base) * 100
            else:
                change = (new - base) * (100 if self.mode == "points" else 1)
            worse = change > self.limit if self.limit >= 0 else change < self.limit
        return "crossed" if worse else None

    def target_text(self) -> str:
        """What the rule asks, in words: "rises by at most 10 %", "at most 0", "Passed stays Passed"."""
        if self.mode == "kept":
            return "Passed stays Passed" if FIGURES[self.figure] == "verdict" else "yes stays yes"
        if self.mode == "ceiling":
            value = self.text.split(":", 1)[1]
            return f"at most {value}"
        if self.mode == "absolute" and self.limit == 0:
            return "no rise"
        unit = {"percent": " %", "points": " pp"}.get(self.mode, "")
        return f"{'rises' if self.limit >= 0 else 'falls'} by at most {abs(self.limit):g}{unit}"


_RULE = re.compile(r"^(?P<figure>[a-z_0-9]+)(\{(?P<selector>[^{}]+)\})?:(?P<value>\S+)$")


def _rule(part: str, given: bool) -> Threshold:
    match = _RULE.match(part)
    if match is None:
        raise CompareError(f"rule {part!r}: write FIGURE[{{SELECTOR}}]:VALUE, e.g. p99:+10%")
    figure, value = match["figure"], match["value"]
    selector = None if match["selector"] in (None, "*") else match["selector"]
    if figure not in FIGURES:
        raise CompareError(f"rule {part!r}: unknown figure {figure!r}; known: {', '.join(FIGURES)}")
    kind = FIGURES[figure]
    if value in ("off", "kept"):
        if value == "kept" and kind not in YES_NO:
            raise CompareError(f"rule {part!r}: kept is for yes/no figures (verdict, present, drained)")
        return Threshold(figure, selector, value, 0.0, part, given)
    if kind in YES_NO:
        raise CompareError(f"rule {part!r}: {figure} is yes/no: write {figure}:kept or {figure}:off")
    number = re.fullmatch(r"([+-])?([0-9]+(?:\.[0-9]+)?)(%|pp)?", value)
    if number is None:
        if kind != "seconds":
            raise CompareError(f"rule {part!r}: {value!r} is not +N%, -N%, +Npp, +N, a ceiling N, kept or off")
        try:
            return Threshold(figure, selector, "ceiling", parse_duration(value), part, given)
        except ValueError as exc:
            raise CompareError(f"rule {part!r}: {exc}") from None
    sign, amount, unit = number.groups()
    if unit and not sign:
        raise CompareError(f"rule {part!r}: say +{amount}{unit} (a rise) or -{amount}{unit} (a fall)")
    if unit == "pp" and kind != "fraction":
        raise CompareError(f"rule {part!r}: percentage points (pp) apply to errors only")
    mode = {"%": "percent", "pp": "points"}.get(unit or "", "absolute" if sign else "ceiling")
    return Threshold(figure, selector, mode, float(amount) * (-1 if sign == "-" else 1), part, given)


def _rules(text: str, given: bool) -> list[Threshold]:
    return [_rule(part, given) for part in (p.strip() for p in text.split(",")) if part]


def parse_thresholds(text: str | None) -> list[Threshold]:
    """The default rules with `text`'s (`--fail-on`, `spec.baseline.failOn`) in their place:
    a rule of the user's replaces the defaults for its figure and selector, and one without a
    selector all the defaults for its figure. CompareError naming the bad part."""
    given = _rules(text or "", True)
    replaced = {(t.figure, t.selector) for t in given}
    every = {t.figure for t in given if t.selector is None}
    defaults = _rules(DEFAULT_THRESHOLDS, False)
    return [t for t in defaults if t.figure not in every and (t.figure, t.selector) not in replaced] + given


def watching(thresholds: list[Threshold], row: Row) -> list[Threshold]:
    """The rules that watch `row`: those naming its scope, else those for every scope."""
    narrow = [t for t in thresholds if t.selects(row) and t.selector is not None]
    return narrow or [t for t in thresholds if t.selects(row)]
