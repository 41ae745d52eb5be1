"""The results page's list of what needs a rerun: every case whose run cannot answer, and every
depth that cannot stand beside the study's steady state, with the rule that says so."""

from __future__ import annotations

from answers_kit import case, results
from elves.engine.models.status import QueueResult
from elves.study.page import rerun_rows

QUEUE = "elves.ingestor.data.in"


def test_the_page_lists_each_case_a_rerun_must_answer_and_why():
    growing = {"runs": [{"index": 0, "series": {"queue_depth": [
        {"label": QUEUE, "points": [[5.0 * i, v] for i, v in enumerate([0, 0, 14, 23, 30, 37, 43, 50, 56, 62, 68, 74, 80])]}]}}]}
    short = case("overload", runs=[results(queues={QUEUE: QueueResult(max=86.0)}, load_seconds=62.0)], queue=QUEUE,
                 above=50)
    short.series, short.case.study.seconds = growing, 600.0
    saturated = case(run={"cores": 2, "loadAverageBefore": [2.0], "loadAverageAfter": [8.6]})
    answered = case()
    rows = rerun_rows([short, saturated, answered])
    assert rows[0] == ["c", "Yes", "overload", "its depth cannot be compared with the study's steady state: the load"
                                               " lasted 1m2s of the study's 10m, and ingestor.data.in was still growing"
                                               " at its end (a rerun of the study's length is needed)"]
    assert rows[1][:3] == ["c", "Inconclusive", "stack-saturated"] and "load average 8.6 on 2 cores" in rows[1][3]
    assert len(rows) == 2


def test_a_run_line_never_calls_quiet_a_machine_its_own_stack_saturated():
    from elves.study.page import run_line

    run = {"cores": 2, "loadAverageBefore": [1.9], "loadAverageAfter": [8.6], "exitCode": 0,
           "machine": {"during": {"outsideCoresMean": 0.11}, "busy": []}}
    line = run_line(run)
    assert "quiet of other work, but **saturated**: load average 8.6 on 2 cores at the run's end" in line
    assert line.endswith("so the stack itself saturated it.")
    assert run_line({**run, "loadAverageAfter": [1.2]}).endswith(": quiet.")
