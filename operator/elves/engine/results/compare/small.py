"""A rule's small-sample form: how an endpoint with too few requests for the rule's n= is still
judged, by a rule whose chance of a false alarm is known for any number of requests.

- A latency (p99, p95, ..., mean): with n requests the p99 is one request's latency, but the
  median is the middle of them all. A rerun of the same system puts at least half its
  requests above the baseline's p90 only with chance P(Binomial(n, 0.1) >= n/2): 0.9 % for
  5 requests, 10^-15 for 69 (1.6 % for 6: that one count is left unjudged). So the new median
  past the baseline's p90 (and past the rule's floor) is a slower endpoint, whatever the p99
  says. A ceiling rule: the median past it.
- The failed share: the new failures are more than the baseline's rate explains, when
  P(Binomial(n, p) >= failed) < 1 %, with p the baseline's rate read generously,
  (failed + 1) / (requests + 2): one failure where the baseline had none is chance, five of 69
  are not.
Below MIN_REQUESTS in either run no rule can tell a change from chance: the figure is named as
not judged (text.py), never passed silently.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil, comb

from elves.engine.models.figure_table import Figures, Row
from elves.engine.models.thresholds import Threshold
from elves.engine.results.compare.figures import format_value

MIN_REQUESTS = 5  # below this, even the median rule's false alarm passes 1 % (4 requests: 5.2 %)
FALSE_ALARM = 0.01  # the chance a rerun of the same system crosses a small-sample rule, at most
SLOW_SHARE = 0.1  # the median rule's reference: the baseline's p90 has this share of requests above it


@dataclass(frozen=True)
class Judgement:
    crossed: bool
    text: str  # what was compared, with the chance, for the table and the breach line


def binomial_tail(n: int, k: int, p: float) -> float:
    """P(Binomial(n, p) >= k)."""
    if k <= 0:
        return 1.0
    return min(1.0, sum(comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(k, n + 1)))


def _value(figures: Figures, scope: str, figure: str) -> float | None:
    found = figures.get((scope, figure))
    return found[1] if found else None


def small_sample(threshold: Threshold, row: Row, before: Figures, after: Figures) -> Judgement | None:
    """The small-sample judgement of an endpoint's row that `threshold` has too few requests for;
    None when no small-sample rule fits (too few even for it, or a figure it does not cover)."""
    base_n, new_n = row.requests
    if (not row.endpoint or threshold.mode == "off" or base_n is None or new_n is None or row.baseline is None
            or row.new is None or min(base_n, new_n) < MIN_REQUESTS):
        return None
    n = f"n={base_n:g} and {new_n:g}"
    if row.kind == "seconds":
        median = _value(after, row.scope, "p50")
        if median is None:
            return None
        if threshold.mode == "ceiling":
            return Judgement(median > threshold.limit, f"{n}: the median {format_value('seconds', median)} now"
                                                       f" against the ceiling {threshold.value}")
        p90 = _value(before, row.scope, "p90")
        if p90 is None:
            return None
        chance = binomial_tail(int(new_n), ceil(new_n / 2), SLOW_SHARE)
        if chance >= FALSE_ALARM:
            return None
        floor = f" + {threshold.floor_text}" if threshold.floor else ""
        return Judgement(median > p90 + threshold.floor,
                         f"{n}: the median {format_value('seconds', median)} now against the baseline's p90"
                         f" {format_value('seconds', p90)}{floor} (a rerun's median passes it with chance {chance:.1g})")
    if row.kind == "fraction":
        failed_before, failed_now = round(row.baseline * base_n), round(row.new * new_n)
        rate = (failed_before + 1) / (base_n + 2)
        chance = binomial_tail(int(new_n), failed_now, rate)
        worse = failed_now / new_n > failed_before / base_n
        return Judgement(worse and chance < FALSE_ALARM,
                         f"{n}: {failed_now} failed now, {failed_before} in the baseline; at the baseline's rate"
                         f" (at most {rate:.1%}) {failed_now} or more fail with chance {chance:.2g}"
                         f" (a breach under {FALSE_ALARM:g})")
    return None
