"""Exact run-wide latency percentiles from k6's cumulative native histograms.

Each k6 series (one per endpoint, status, runner, ...) carries a histogram that only
grows during a run, so its largest sample is the whole run. Merging those per endpoint
and reading the percentile within the bucket where the rank falls gives the run's
percentile over all runners, without increase()'s extrapolation.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from elves.engine.results.prometheus import Series


@dataclass
class Histogram:
    count: float = 0.0
    sum: float = 0.0
    buckets: dict[tuple[float, float], float] = field(default_factory=dict)  # (lower, upper] -> count

    def add(self, raw: dict) -> None:
        """Add one histogram as Prometheus's JSON API gives it."""
        self.count += float(raw.get("count", 0))
        self.sum += float(raw.get("sum", 0))
        for _rule, lower, upper, count in raw.get("buckets", []):
            key = (float(lower), float(upper))
            self.buckets[key] = self.buckets.get(key, 0.0) + float(count)

    def less(self, earlier: "Histogram") -> "Histogram":
        """This cumulative histogram less an earlier reading of the same series: what came between."""
        buckets = {key: count - earlier.buckets.get(key, 0.0) for key, count in self.buckets.items()}
        return Histogram(max(self.count - earlier.count, 0.0), max(self.sum - earlier.sum, 0.0),
                         {key: count for key, count in buckets.items() if count > 0})

    def quantile(self, q: float) -> float | None:
        """The q-quantile (0..1), interpolated linearly inside its bucket; None when empty."""
        if self.count <= 0:
            return None
        rank = q * self.count
        seen = 0.0
        ordered = sorted(self.buckets.items(), key=lambda kv: (kv[0][1], kv[0][0]))
        for (lower, upper), count in ordered:
            if count <= 0:
                continue
            if seen + count >= rank:
                lower = max(lower, 0.0)  # the zero bucket spans [-threshold, threshold]
                return lower + (upper - lower) * (rank - seen) / count
            seen += count
        return ordered[-1][0][1] if ordered else None

    @property
    def mean(self) -> float | None:
        return self.sum / self.count if self.count > 0 else None


def run_histograms(series: list[Series], by: str = "endpoint") -> tuple[dict[str, Histogram], Histogram]:
    """Per `by` label and in total, the merge of each series' final (largest) histogram.

    The same series may come in several pieces (chunked reads); its largest sample wins."""
    finals: dict[frozenset, tuple[dict[str, str], dict]] = {}
    for s in series:
        if not s.histograms:
            continue
        key = frozenset(s.labels.items())
        _, last = max(s.histograms, key=lambda th: float(th[1].get("count", 0)))
        if key not in finals or float(last.get("count", 0)) > float(finals[key][1].get("count", 0)):
            finals[key] = (s.labels, last)
    grouped: dict[str, Histogram] = defaultdict(Histogram)
    total = Histogram()
    for labels, histogram in finals.values():
        grouped[labels.get(by, "")].add(histogram)
        total.add(histogram)
    return dict(grouped), total
