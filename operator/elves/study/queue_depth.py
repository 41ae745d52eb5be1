"""A work queue's depth as the results page states it: the peak, the steady state and the trend at
the load's end (elves.engine.results.depth), the transient right after a reset set apart, and
whether the figure may stand beside the study's steady state.

The depth over the load comes from the run's summary (recorded since the engine computes it) or, for a summary
written before, from the depth over time in the series.json beside it; without either, the page
says what it cannot tell rather than read a deepest figure as a steady state.
"""

from __future__ import annotations

from elves.engine.models.status import DepthOverLoad, RunStatus
from elves.engine.models.summary import work_queues
from elves.engine.models.units import format_duration
from elves.engine.results.depth import depth_over_load, transient_only, trend
from elves.study.case_results import CaseResult

NO_DEPTH_OVER_LOAD = "neither the summary's depth over the load nor a series.json with the depth over time was recorded"


def depth_of(result: CaseResult, run: RunStatus, queue: str) -> DepthOverLoad | None:
    """The queue's depth over the load in this run: the summary's, else computed from series.json, else None."""
    r = run.results
    if r is None:
        return None
    recorded = r.queues.get(queue)
    if recorded is not None and recorded.over_load is not None:
        return recorded.over_load
    plotted = {p["index"]: p.get("series", {}) for p in (result.series or {}).get("runs", [])}.get(run.index, {})
    for line in plotted.get("queue_depth", []):
        if line.get("label") == queue:
            return depth_over_load(((t, v) for t, v in line.get("points", [])), r.load_seconds)
    return None


def _after_reset(result: CaseResult) -> str:
    reset = result.test is not None and result.test.spec.reset
    return "right after the reset" if reset else "at the load's start"


def depth_words(result: CaseResult, queue: str, depth: DepthOverLoad) -> str:
    """`ingestor.data.in peak 86 at 1m2s; still growing (+70/min) over the load's last 21s: no steady state`."""
    short = queue.removeprefix("elves.")
    last = format_duration(round(depth.steady_seconds))
    way = trend(depth)
    tail = (f"steady {depth.steady:g} over the load's last {last}" if way == "flat" else
            f"still {way} ({depth.trend:+.0f}/min) over the load's last {last}: no steady state")
    if transient_only(depth):
        return (f"{short} {depth.transient:g} only in the transient {_after_reset(result)} (its first"
                f" {format_duration(round(depth.transient_seconds))}), then at most {depth.peak:g}; {tail}")
    return f"{short} peak {depth.peak:g} at {format_duration(round(depth.peak_at or 0))}; {tail}"


def depth_text(result: CaseResult, run: RunStatus, queue: str) -> str:
    """The queue's depth over the load in words, or its deepest figure and why nothing more can be said."""
    depth = depth_of(result, run, queue)
    if depth is not None:
        return depth_words(result, queue, depth)
    r = run.results
    deepest = r.queues[queue].max if r is not None and queue in r.queues else None
    head = f"{queue.removeprefix('elves.')} deepest {deepest:g}" if deepest is not None else queue
    return f"{head} (peak, steady state and trend cannot be told: {NO_DEPTH_OVER_LOAD})"


def steady_comparison(result: CaseResult, run: RunStatus, queue: str) -> str | None:
    """Why the queue's depth cannot stand beside the study's steady state, or None when it can (or
    the study gives no duration to compare with). It can when the run's load lasted as long as the
    study's, or the queue was flat over the load's last third (a steady state reached)."""
    seconds = result.case.study.seconds
    r = run.results
    if seconds is None or r is None:
        return None
    depth = depth_of(result, run, queue)
    if r.load_seconds >= seconds:
        return None
    lasted = f"the load lasted {format_duration(round(r.load_seconds))} of the study's {format_duration(round(seconds))}"
    if depth is None:
        return f"cannot be compared with the study's steady state: {lasted}, and {NO_DEPTH_OVER_LOAD}"
    way = trend(depth)
    if way == "flat":
        return None
    return (f"cannot be compared with the study's steady state: {lasted}, and {queue.removeprefix('elves.')} was"
            f" still {way} at its end (a rerun of the study's length is needed)")


def queues_text(result: CaseResult, run: RunStatus) -> str:
    """Every work queue's depth over the load in words; one that stayed empty, just its 0."""
    r = run.results
    assert r is not None
    parts = [f"{queue.removeprefix('elves.')} 0" if not q.max else depth_text(result, run, queue)
             for queue, q in work_queues(r.queues).items() if q.max is not None]
    return "; ".join(parts) or "-"
