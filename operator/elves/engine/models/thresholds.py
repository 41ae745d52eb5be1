"""The rules of the regression gate, the language `elves compare --fail-on` and spec.baseline.failOn
are written in: which change of which figure fails a comparison.

RULES_HELP says how a rule is written and DEFAULTS_HELP which rules hold when the user
writes none (`elves compare --help` prints both).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from elves.engine.models.figure_table import (DEPLOYMENT_FIGURES, ENDPOINT_FIGURES, FIGURES, LEDGER_FIGURES, PRESENT,
                                              QUEUE_FIGURES, RUN_FIGURES, TOTAL, VERDICT, YES_NO, Row)
from elves.engine.models.units import parse_duration

class CompareError(ValueError):
    """An unreadable summary or a bad rule; the CLI exits 2 with this message."""


RULES_HELP = ("""\
A rule is FIGURE[{SELECTOR}]:VALUE[:floor=FLOOR][:n=N], where VALUE is
  +10%  -10%     a rise (fall) by more than 10 % of the baseline fails; any rise from 0 is past +N%
  +0.5pp         errors only: a rise by more than 0.5 percentage points fails
  +2  -2  +0     a rise (fall) by more than 2 fails; +0: any rise fails
  0  250ms       a ceiling on the new value, whatever the baseline (a duration for latencies)
  kept           yes/no figures (verdict, present, drained): what was yes in the baseline stays yes
  off            no rule for this figure (and scope)
floor=FLOOR (with +N% or -N%): a change of at most FLOOR is no breach whatever its share; the
rule crosses only past both. FLOOR is in the figure's unit: a duration for latencies and the
drain (5ms, 15s), points for shares (0.5pp), a plain number for the rest (10). n=N (endpoint
figures): an endpoint is judged as the rule says only when it made at least N requests in both
runs (the total always is); with fewer, a latency is judged by its median against the
baseline's p90 and a failed share by a binomial test (a false alarm under 1 %), and with fewer
than 5 the table names the figure "too few requests to judge". A rule without floor= or n=
keeps those of the default rule for its figure; floor=0 and n=0 turn them off.
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

# The floors and request counts of the defaults are the measurements' own resolution: a rerun
# of the same LoadTest on the same machine moves a figure by that much with nothing changed.
DEFAULTS = (  # (rule, what it asks)
    ("verdict:kept", "a Passed run is not Failed now"),
    ("present:kept", "every endpoint, queue and deployment of the baseline is in the new run"),
    ("rate{total}:-10%", "the achieved request rate fell by at most 10 %"),
    # floor=5ms: k6 writes latencies as native histograms of bucket factor 1.1 (schema 3: each
    # bucket 2^(1/8), about 9 %, wider than the one below) and a p99 is interpolated inside the
    # bucket its rank falls in: each run's p99 is known to about a bucket, the difference of two
    # runs to two. The 10 % spans one; at the 17-28 ms p99 of the committed cases gate-p99-100ms,
    # warmup-plateau, journeys, users-ramp and breakpoint it is 2-3 ms where two buckets are 3-5 ms.
    # From 50 ms up the 10 % is the larger of the two anyway.
    # n=100: with fewer requests the p99's rank (0.99 n) falls on the slowest request: the p99 of
    # an endpoint called once or a few times is one request's latency, not a percentile.
    ("p99:+10%:floor=5ms:n=100", "the p99 latency, of the total and of every endpoint, rose by at most 10 %"),
    # n=200: one failed request is 1/n of an endpoint's share, past 0.5 points below 200 requests.
    ("errors:+0.5pp:n=200", "the failed share, of the total and of every endpoint, rose by at most 0.5 points"),
    ("dropped:+0", "no more iterations dropped by k6"),
    ("results_failed:+0", "no more work results FAILED (plots the ingestor could not make)"),
    # A dead-letter queue keeps what earlier tests left in it (without reset): compared, not absolute.
    ("dead_letters:+0", "no more messages in the dead-letter queues"),
    ("duplicates:+0", "no more duplicate deliveries discarded"),
    ("restarts:+0", "no more restarts of any deployment"),
    ("oom_kills:+0", "no more OOM kills of any deployment"),
    # floor=10: the depth counts unacknowledged messages too, so consumers at work hold up to
    # concurrency x prefetch of them (2 per ingestor replica by default) with nothing piling up,
    # and a scrape can land on a few arrivals not yet delivered: the committed runs that kept up
    # peaked at 2 to 8 messages (but users-ramp, 65 requests a second from 90 users: 32).
    ("deepest_queue:+50%:floor=10", "the deepest work queue rose by at most 50 %"),
    ("depth_max:+50%:floor=10", "every queue's deepest depth (work and dead-letter) rose by at most 50 %"),
    ("depth_final:+50%:floor=10", "every queue's depth at the end rose by at most 50 %"),
    # -20%: completed work per second is over the load and the drain, and a rerun's drain moves by up
    # to the drain rule's 15 s: on the study's 1-minute loads (61 s, drains of 4-12 s) that is 18 %.
    ("throughput:-20%", "completed work per second (over the load and the drain) fell by at most 20 %"),
    # floor=15s: the runner looks at the drain every 2 s (its draining step), and a drain ends no
    # sooner than a queue-depth sample scraped after the load: a system with nothing left reads
    # from one step to a scrape interval plus a step (2-6 s locally, scraping every 5 s, as the
    # committed cases read; 2-16 s at the chart's 15 s). Two reruns differ by up to a scrape
    # interval, locally by two when a sample catches a message still in flight: 15 s spans both.
    ("drain:+50%:floor=15s", "the drain took at most 50 % longer"),
    ("drained:kept", "a drain that finished still finishes"),
    ("lost_requests:0", "no accepted request lost, whatever the baseline"),
    ("lost_logs:0", "no promised activity log lost, whatever the baseline"),
)
DEFAULT_THRESHOLDS = ",".join(rule for rule, _ in DEFAULTS)
DEFAULTS_HELP = ("The default rules (--fail-on adds to them, and replaces those of the figures it names):\n"
                 + "".join(f"  {rule:<27}  {what}\n" for rule, what in DEFAULTS)
                 + "Examples: --fail-on p99:+25% (a looser p99, every scope, same floor and n);\n"
                   "--fail-on p99{getUser}:off; --fail-on drain:+50%:floor=4s (a stricter drain);\n"
                   "--fail-on p99:250ms,restarts:off.\n")

FLOOR, MIN_REQUESTS = "floor", "n"


def too_few_text(requests: float) -> str:
    """Why a rule left an endpoint's figure alone."""
    return f"too few requests to judge (n={requests:g})"


@dataclass(frozen=True)
class Threshold:
    figure: str
    selector: str | None  # None: every scope that has the figure
    mode: str  # percent | points | absolute | ceiling | kept | off
    limit: float  # signed for percent/points/absolute: +10 a rise, -10 a fall
    text: str  # the whole rule, with the floor and n it holds (inherited ones too)
    given: bool = False  # written by the user (a rule that watches nothing is then an error)
    value: str = ""  # VALUE as written: +10%, 250ms, kept
    floor: float = 0.0  # percent rules: a change of at most this (the figure's unit) is no breach
    floor_text: str = ""  # the floor as written: 5ms, 10
    min_requests: int = 0  # endpoint figures: judged only with at least this many requests in both runs

    def selects(self, row: Row) -> bool:
        return row.figure == self.figure and self.selector in (None, row.selector)

    def too_few(self, row: Row) -> float | None:
        """The request count short of n when the row's endpoint made too few requests to judge,
        else None. An endpoint the baseline judged and the new run lacks the figure of is judged
        (as missing): failing closed needs no count."""
        if not self.min_requests or not row.endpoint or self.mode == "off":
            return None
        before, after = row.requests
        if before is not None and before < self.min_requests:
            return before
        if after is not None and after < self.min_requests and row.new is not None:
            return after
        return None

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
        if self.mode == "percent":  # a change within the floor is no breach, whatever its share
            worse = worse and abs(new - base) > self.floor
        return "crossed" if worse else None

    def target_text(self) -> str:
        """What the rule asks, in words: "rises by at most 10 % or 5ms", "at most 0", "Passed stays Passed"."""
        if self.mode == "kept":
            return "Passed stays Passed" if FIGURES[self.figure] == "verdict" else "yes stays yes"
        if self.mode == "ceiling":
            return f"at most {self.value}"
        if self.mode == "absolute" and self.limit == 0:
            return "no rise"
        unit = {"percent": " %", "points": " pp"}.get(self.mode, "")
        floor = f" (or {self.floor_text}, if more)" if self.floor else ""
        return f"{'rises' if self.limit >= 0 else 'falls'} by at most {abs(self.limit):g}{unit}{floor}"


_RULE = re.compile(r"^(?P<figure>[a-z_0-9]+)(\{(?P<selector>[^{}]+)\})?:(?P<value>[^:\s]+)(?P<options>(:\S*)?)$")


def _floor(part: str, kind: str, text: str) -> float:
    """A floor in the figure's unit: a duration for latencies, points for shares, else a number
    (0 in any unit: no floor)."""
    if text == "0":
        return 0.0
    if kind == "seconds":
        try:
            return parse_duration(text)
        except ValueError as exc:
            raise CompareError(f"rule {part!r}: floor {exc}") from None
    number = text.removesuffix("pp") if kind == "fraction" else text
    if kind == "fraction" and number == text:
        raise CompareError(f"rule {part!r}: floor {text!r}: write a share in percentage points (0.5pp)")
    if not re.fullmatch(r"[0-9]+(\.[0-9]+)?", number):
        raise CompareError(f"rule {part!r}: floor {text!r} is not a number")
    return float(number) / (100 if kind == "fraction" else 1)


def _options(part: str, text: str) -> dict[str, str]:
    """The :floor=..:n=.. after a rule's value, by name."""
    found: dict[str, str] = {}
    for option in text.split(":")[1:]:
        name, equals, value = option.partition("=")
        if name not in (FLOOR, MIN_REQUESTS) or not equals or not value:
            raise CompareError(f"rule {part!r}: {option!r}: after the value write :floor=FLOOR or :n=N")
        if name in found:
            raise CompareError(f"rule {part!r}: {name}= given twice")
        found[name] = value
    return found


def _rule(part: str, given: bool, defaults: dict[str, Threshold] | None = None) -> Threshold:
    """The rule `part`; `defaults` (a default rule by figure) lend it the floor and n it does not write."""
    match = _RULE.match(part)
    if match is None:
        raise CompareError(f"rule {part!r}: write FIGURE[{{SELECTOR}}]:VALUE[:floor=FLOOR][:n=N], e.g. p99:+10%")
    figure, value = match["figure"], match["value"]
    selector = None if match["selector"] in (None, "*") else match["selector"]
    if figure not in FIGURES:
        raise CompareError(f"rule {part!r}: unknown figure {figure!r}; known: {', '.join(FIGURES)}")
    kind = FIGURES[figure]
    mode, limit = _value(part, figure, kind, value)
    options = _options(part, match["options"])
    default = (defaults or {}).get(figure)
    if options and mode == "off":
        raise CompareError(f"rule {part!r}: off takes no floor= or n=")
    floor_text = options.get(FLOOR, default.floor_text if default and mode == "percent" else "")
    if FLOOR in options and mode != "percent":
        raise CompareError(f"rule {part!r}: floor= is for relative rules (+N% or -N%)")
    endpoints = figure in ENDPOINT_FIGURES and selector != TOTAL  # the total is always judged
    n_text = options.get(MIN_REQUESTS, str(default.min_requests) if default and endpoints and mode != "off" else "0")
    if MIN_REQUESTS in options and not endpoints:
        raise CompareError(f"rule {part!r}: n= is for the figures of endpoints ({', '.join(ENDPOINT_FIGURES)});"
                           " the total is always judged")
    if not n_text.isdigit():
        raise CompareError(f"rule {part!r}: n={n_text} is not a whole number of requests")
    floor, n = _floor(part, kind, floor_text) if floor_text else 0.0, int(n_text)
    text = (f"{figure}{'{' + match['selector'] + '}' if match['selector'] else ''}:{value}"
            + (f":{FLOOR}={floor_text}" if floor else "") + (f":{MIN_REQUESTS}={n}" if n else ""))
    return Threshold(figure, selector, mode, limit, text, given, value, floor, floor_text if floor else "", n)


def _value(part: str, figure: str, kind: str, value: str) -> tuple[str, float]:
    """(mode, signed limit) of a rule's VALUE."""
    if value in ("off", "kept"):
        if value == "kept" and kind not in YES_NO:
            raise CompareError(f"rule {part!r}: kept is for yes/no figures (verdict, present, drained)")
        return value, 0.0
    if kind in YES_NO:
        raise CompareError(f"rule {part!r}: {figure} is yes/no: write {figure}:kept or {figure}:off")
    number = re.fullmatch(r"([+-])?([0-9]+(?:\.[0-9]+)?)(%|pp)?", value)
    if number is None:
        if kind != "seconds":
            raise CompareError(f"rule {part!r}: {value!r} is not +N%, -N%, +Npp, +N, a ceiling N, kept or off")
        try:
            return "ceiling", parse_duration(value)
        except ValueError as exc:
            raise CompareError(f"rule {part!r}: {exc}") from None
    sign, amount, unit = number.groups()
    if unit and not sign:
        raise CompareError(f"rule {part!r}: say +{amount}{unit} (a rise) or -{amount}{unit} (a fall)")
    if unit == "pp" and kind != "fraction":
        raise CompareError(f"rule {part!r}: percentage points (pp) apply to errors only")
    mode = {"%": "percent", "pp": "points"}.get(unit or "", "absolute" if sign else "ceiling")
    return mode, float(amount) * (-1 if sign == "-" else 1)


def _rules(text: str, given: bool, defaults: dict[str, Threshold] | None = None) -> list[Threshold]:
    return [_rule(part, given, defaults) for part in (p.strip() for p in text.split(",")) if part]


def parse_thresholds(text: str | None) -> list[Threshold]:
    """The default rules with `text`'s (`--fail-on`, `spec.baseline.failOn`) in their place:
    a rule of the user's replaces the defaults for its figure and selector, and one without a
    selector all the defaults for its figure. CompareError naming the bad part."""
    defaults = _rules(DEFAULT_THRESHOLDS, False)
    given = _rules(text or "", True, {t.figure: t for t in defaults})
    replaced = {(t.figure, t.selector) for t in given}
    every = {t.figure for t in given if t.selector is None}
    return [t for t in defaults if t.figure not in every and (t.figure, t.selector) not in replaced] + given


def watching(thresholds: list[Threshold], row: Row) -> list[Threshold]:
    """The rules that watch `row`: those naming its scope, else those for every scope."""
    narrow = [t for t in thresholds if t.selects(row) and t.selector is not None]
    return narrow or [t for t in thresholds if t.selects(row)]
