"""A work queue's depth on the results page: the summary's depth over the load, else one computed from the
series.json beside it, else what cannot be told; and whether it may stand beside the study's
steady state (a run as long as the study's, or a queue flat at the load's end)."""

from __future__ import annotations

from answers_kit import case, queue, results
from elves.engine.models.status import QueueResult
from elves.study.answers import answer
from elves.study.queue_depth import depth_text, depth_of, steady_comparison

QUEUE = "elves.ingestor.data.in"
# case-1c as committed: still piling up when its 62 s load ended.
GROWING = [0, 0, 14, 23, 30, 37, 43, 50, 56, 62, 68, 74, 80]


def _series(values: list[float]) -> dict:
    return {"runs": [{"index": 0, "series": {"queue_depth": [
        {"label": QUEUE, "points": [[5.0 * i, v] for i, v in enumerate(values)]}]}}]}


def _overload(queues: dict, series: dict | None = None, seconds: float | None = 600.0):
    found = case("overload", runs=[results(queues=queues, load_seconds=62.0)], queue=QUEUE, above=50)
    found.series = series
    found.case.study.seconds = seconds
    return found


def test_an_older_summary_gets_its_depth_over_the_load_from_the_series_beside_it():
    older = _overload({QUEUE: QueueResult(max=86.0, final=0.0)}, _series(GROWING))
    depth = depth_of(older, older.runs[0], QUEUE)
    assert depth is not None and depth.peak == 80.0
    assert depth_text(older, older.runs[0], QUEUE).startswith("ingestor.data.in peak 80 at 1m; still growing (+")


def test_a_depth_still_growing_in_a_run_shorter_than_the_studys_cannot_stand_beside_its_steady_state():
    short = _overload({QUEUE: QueueResult(max=86.0, final=0.0)}, _series(GROWING))
    said = steady_comparison(short, short.runs[0], QUEUE)
    assert said == ("cannot be compared with the study's steady state: the load lasted 1m2s of the study's 10m, and"
                    " ingestor.data.in was still growing at its end (a rerun of the study's length is needed)")
    found = answer(short)
    assert found.outcome == "Yes" and found.rule == "overload" and said in found.text
    # Flat at the load's end: a steady state reached, the figure stands; so does one from a run as long as the study's.
    flat = _overload({QUEUE: queue(100.0, steady=100.0)})
    assert steady_comparison(flat, flat.runs[0], QUEUE) is None
    long_enough = _overload({QUEUE: QueueResult(max=86.0, final=0.0)}, _series(GROWING), seconds=60.0)
    assert steady_comparison(long_enough, long_enough.runs[0], QUEUE) is None


def test_without_a_depth_over_the_load_or_series_the_page_says_what_it_cannot_tell():
    bare = _overload({QUEUE: QueueResult(max=86.0, final=0.0)})
    assert depth_text(bare, bare.runs[0], QUEUE) == (
        "ingestor.data.in deepest 86 (peak, steady state and trend cannot be told: neither the summary's depth"
        " over the load nor a series.json with the depth over time was recorded)")
    assert "cannot be compared with the study's steady state" in steady_comparison(bare, bare.runs[0], QUEUE)
    found = answer(bare)
    assert found.outcome == "Cannot tell" and "whether only in the transient of the load's first part cannot be told" in found.text
