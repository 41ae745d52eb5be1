"""A queue's depth over a run's load read three ways: its peak, its steady state and its trend at
the load's end, with the transient of the load's first part set apart.

A deepest figure alone misleads both ways. Right after a reset the services start cold, and a
queue rises for a few seconds and empties again: that transient is not how the system holds the
load. And a queue still growing when a short load ends has reached no steady state, so its depth
cannot stand beside a longer run's. One function serves the engine (it records it with
each queue's results) and the results page (which computes it from a report's series.json when
an older summary lacks it).
"""

from __future__ import annotations

from collections.abc import Iterable
from statistics import median
from typing import Literal

from elves.engine.models.status import DepthOverLoad

# The load's first third (at most a minute) is the transient: on a reset, cold JVMs and empty
# caches; the queues of the committed runs rose and emptied again within 15-45 s of a reset.
TRANSIENT_SHARE, TRANSIENT_MAX_SECONDS = 1 / 3, 60.0
# The load's last third is where the steady state, if any, is read.
STEADY_SHARE = 1 / 3
# A fitted line over the last third that moves by more than this many messages (or a tenth of the
# steady depth, if more) is a trend; less is a queue that scrapes every few seconds jitter around.
TREND_MESSAGES, TREND_SHARE = 5.0, 0.1
MIN_POINTS = 3  # fewer readings in the last third fit no line

Trend = Literal["growing", "flat", "falling"]


def depth_over_load(points: Iterable[tuple[float, float | None]], load_seconds: float) -> DepthOverLoad | None:
    """The depth over the load of (seconds since the load started, depth) readings, or None when the load's
    last third holds too few readings to say anything about a steady state."""
    inside = sorted((t, v) for t, v in points if v is not None and 0.0 <= t <= load_seconds)
    transient_end = min(load_seconds * TRANSIENT_SHARE, TRANSIENT_MAX_SECONDS)
    steady_start = load_seconds * (1 - STEADY_SHARE)
    last = [(t, v) for t, v in inside if t >= steady_start]
    if len(last) < MIN_POINTS:
        return None
    early = [v for t, v in inside if t < transient_end]
    later = [(t, v) for t, v in inside if t >= transient_end]
    peak_at, peak = max(later, key=lambda p: (p[1], -p[0]))
    return DepthOverLoad(peak=peak, peak_at=round(peak_at, 3), transient=max(early) if early else None,
                        transient_seconds=round(transient_end, 3), steady=median(v for _, v in last),
                        steady_seconds=round(load_seconds - steady_start, 3), trend=round(_slope(last) * 60, 3))


def _slope(points: list[tuple[float, float]]) -> float:
    """Least-squares messages per second."""
    n = len(points)
    mean_t = sum(t for t, _ in points) / n
    mean_v = sum(v for _, v in points) / n
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    return sum((t - mean_t) * (v - mean_v) for t, v in points) / spread if spread else 0.0


def trend(depth: DepthOverLoad) -> Trend:
    """Whether the queue was still growing, flat or falling over the load's last third."""
    moved = (depth.trend or 0.0) * depth.steady_seconds / 60
    if abs(moved) <= max(TREND_MESSAGES, TREND_SHARE * (depth.steady or 0.0)):
        return "flat"
    return "growing" if moved > 0 else "falling"


def transient_only(depth: DepthOverLoad) -> bool:
    """Whether the deepest point of the load was in its first part, deeper than anything after."""
    return depth.transient is not None and depth.transient > (depth.peak or 0.0)
