"""The gate fails closed: a figure the baseline has and the new run lacks is a breach named
"missing"; when nothing can be compared the outcome is 2 with the reason, never a pass. For
`elves compare` (through the installed `elves` command) and for `spec.baseline`."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

from elves.engine.results.compare import (BREACHED, INCOMPARABLE, PASSED, baseline_checks, compare_paths,
                                          summary_status, text_lines)
from summary_testkit import BUSY, SWEEP, breaches, committed, judged, pair, results, run, write

ELVES = Path(sys.executable).parent / "elves"


def _errored(summary: dict) -> dict:
    """What a LoadTest that never got to its load leaves: no runs, no results, a harness error."""
    status = summary["status"]
    status.update(phase="Error", runs=[], conditions=[{
        "type": "HarnessError", "status": "True", "reason": "NoLoadData", "message": "k6 wrote nothing",
        "lastTransitionTime": "2026-11-25T13:50:04Z"}])
    status.pop("results", None), status.pop("verdict", None)
    return summary


def test_a_new_run_without_runs_is_nothing_to_compare():
    baseline, new = pair()
    comparison = judged(baseline, _errored(new), None)
    assert comparison.outcome == INCOMPARABLE and comparison.lines == []
    assert comparison.problem == "the new run has no run with results (Error (NoLoadData: k6 wrote nothing))"
    assert text_lines(comparison)[-1] == f"Nothing to compare: {comparison.problem}."


def test_a_baseline_without_runs_is_nothing_to_compare():
    baseline, new = pair()
    comparison = judged(_errored(baseline), new)
    assert comparison.outcome == INCOMPARABLE and comparison.problem.startswith("the baseline has no run with results")


def test_another_number_of_runs_is_another_loadtest():
    baseline, new = pair(SWEEP)
    del new["status"]["runs"][2]
    comparison = judged(baseline, new)
    assert comparison.outcome == INCOMPARABLE
    assert comparison.problem == ("the baseline has 3 run(s), the new run 2: not the same LoadTest"
                                  " (compare runs of one sweep)")


def test_other_sweep_points_are_another_loadtest():
    baseline, new = pair(SWEEP)
    run(new, 1)["point"] = {"system.resources.ingestor.memory": "768Mi"}
    comparison = judged(baseline, new)
    assert comparison.outcome == INCOMPARABLE
    assert "run 1 swept {'system.resources.ingestor.memory': '512Mi'} in the baseline and" in comparison.problem


def test_a_sweep_point_without_results_is_missing_every_figure():
    baseline, new = pair(SWEEP)
    run(new, 2).pop("results"), run(new, 2).pop("verdict")
    run(new, 2)["phase"] = "Error"
    comparison = judged(baseline, new)
    assert comparison.outcome == BREACHED
    missing = {(b.row.run, b.kind) for b in comparison.breaches}
    assert missing == {("run 2 (system.resources.ingestor.memory=1Gi)", "missing")}
    assert {"verdict", "rate", "p99", "lost_requests", "restarts"} <= {b.row.figure for b in comparison.breaches}


def test_a_p99_the_new_run_lacks_is_missing():
    baseline, new = pair()
    del results(new)["total"]["p99"]
    comparison = judged(baseline, new)
    assert breaches(comparison) == [("p99:+10%:floor=5ms:n=100", "total", "p99", "missing")]
    assert ("MISSING total p99: 21ms in the baseline, none in the new run (rule p99:+10%:floor=5ms:n=100)"
            in text_lines(comparison))


def test_a_p99_that_is_nan_is_missing(tmp_path):
    baseline, new = pair(BUSY)
    results(new)["endpoints"]["getData"]["p99"] = math.nan  # json writes NaN, as a division by no request gives
    before, after = write(tmp_path / "before", baseline), write(tmp_path / "after", new)
    assert "NaN" in (after / "summary.json").read_text()
    assert breaches(compare_paths(before, after)) == [
        ("p99:+10%:floor=5ms:n=100", "endpoint getData", "p99", "missing")]


def test_a_ledger_the_new_run_lacks_is_missing():
    baseline, new = pair()
    results(new)["ledger"] = None  # the registry's ledger was unavailable
    assert breaches(judged(baseline, new)) == [("lost_requests:0", "ledger", "lost_requests", "missing"),
                                               ("lost_logs:0", "ledger", "lost_logs", "missing"),
                                               ("duplicates:+0", "ledger", "duplicates", "missing"),
                                               ("results_failed:+0", "ledger", "results_failed", "missing")]


def test_a_verdict_the_new_run_lacks_is_missing():
    baseline, new = pair()
    del run(new)["verdict"]
    assert breaches(judged(baseline, new)) == [("verdict:kept", "total", "verdict", "missing")]


def test_queues_the_new_run_did_not_measure_are_missing():
    baseline, new = pair()
    results(new)["queues"] = {}  # RabbitMQ was not scraped
    found = breaches(judged(baseline, new))
    assert ("deepest_queue:+50%:floor=10", "total", "deepest_queue", "missing") in found
    assert {b[1] for b in found if b[2] == "present"} == {f"queue {q}" for q in results(baseline)["queues"]}


def test_a_rule_of_the_users_that_watches_nothing_is_nothing_to_compare():
    baseline, new = pair()
    comparison = judged(baseline, new, "p99{getdata}:+5%")  # the endpoint is getData
    assert comparison.outcome == INCOMPARABLE
    assert [t.text for t in comparison.blind] == ["p99{getdata}:+5%:floor=5ms:n=100"]
    assert "Nothing to compare for rule p99{getdata}:+5%:floor=5ms:n=100: it watches no figure" in \
        text_lines(comparison)[-1]


def test_elves_compare_exits_0_1_and_2(tmp_path):
    """The installed command, as CI runs it."""
    baseline, new = pair()
    same = write(tmp_path / "same", new)
    before = write(tmp_path / "before", baseline)
    results(new)["deployments"]["ingestor"]["oomKills"] += 3
    worse = write(tmp_path / "worse", new)
    nothing = write(tmp_path / "nothing", _errored(committed()))

    def elves(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(ELVES), "compare", *args], capture_output=True, text=True, timeout=60)

    passed, breached, empty = elves(str(before), str(same)), elves(str(before), str(worse)), \
        elves(str(before), str(nothing))
    assert (passed.returncode, breached.returncode, empty.returncode) == (0, 1, 2)
    assert passed.stdout.splitlines()[-1].startswith("As good as the baseline")
    assert "CROSSED deployment ingestor oom_kills: 0 -> 3" in breached.stdout
    assert (f"Nothing to compare: the new run, gate-p99-100ms ({baseline['generatedAt']}), has no run with"
            " results (Error (NoLoadData: k6 wrote nothing))." in empty.stdout)
    assert elves(str(before), str(tmp_path / "absent")).returncode == 2


# --- spec.baseline: the same rules inside a run -----------------------------------------

def _results(summary: dict, index: int = 0):
    return summary_status(summary).runs[index].results


def test_the_in_run_gate_passes_a_run_as_good_as_its_baseline_and_leaves_the_verdict_to_the_objectives():
    baseline, new = pair()
    checks = baseline_checks(baseline, "before", _results(new))
    assert checks and all(c.ok for c in checks)
    assert not any("verdict" in c.name for c in checks)


def test_the_in_run_gate_fails_on_a_missing_p99_and_a_missing_ledger():
    baseline, new = pair(BUSY)
    del results(new)["endpoints"]["getData"]["p99"]
    results(new)["ledger"] = None
    failed = {c.name: c for c in baseline_checks(baseline, "before", _results(new)) if not c.ok}
    assert set(failed) == {"baseline p99:+10%:floor=5ms:n=100", "baseline duplicates:+0", "baseline lost_requests:0",
                           "baseline lost_logs:0", "baseline results_failed:+0"}
    assert failed["baseline p99:+10%:floor=5ms:n=100"].detail == "endpoint getData p99: 19ms in before, missing now"
    assert failed["baseline lost_requests:0"].observed is None


def test_the_in_run_gate_with_a_baseline_that_has_no_runs_fails():
    baseline, new = pair()
    checks = baseline_checks(_errored(baseline), "before", _results(new))
    assert [(c.name, c.ok) for c in checks] == [("baseline", False)]
    assert checks[0].detail.startswith("nothing to compare: the baseline, before, has no run with results (Error")


def test_the_in_run_gate_names_the_first_breach_and_counts_the_rest():
    baseline, new = pair(BUSY)
    for name in ("getData", "getStatus", "getHistory"):
        results(new)["endpoints"][name]["p99"] *= 2
    check = next(c for c in baseline_checks(baseline, "before", _results(new), "p99{total}:off") if not c.ok)
    assert check.name == "baseline p99:+10%:floor=5ms:n=100"
    assert check.target == "rises by at most 10 % (or 5ms, if more) against before"
    assert check.detail == "endpoint getData p99: 19ms in before, 38ms now (+100.0 %); 2 more"
    # users-ramp ended Failed (its getImage 500s): never as good as a baseline, even itself.
    assert judged(baseline, new).outcome == BREACHED and judged(baseline, baseline).outcome == BREACHED
    assert judged(baseline, baseline).breaches == [] and judged(baseline, baseline).failed


def test_the_in_run_gate_of_a_sweep_compares_each_run_with_its_counterpart():
    baseline, new = pair(SWEEP)
    for summary in (baseline, new):  # the smallest memory limit: the ingestor was OOM-killed, the largest: not
        results(summary, 0)["deployments"]["ingestor"].update(restarts=1, oomKills=1)
        results(summary, 2)["deployments"]["ingestor"].update(restarts=0, oomKills=0)
    assert all(c.ok for c in baseline_checks(baseline, "before", _results(new, 0), run_index=0))
    last = {c.name: c.ok for c in baseline_checks(baseline, "before", _results(new, 0))}  # against run 2
    assert not last["baseline restarts:+0"] and not last["baseline oom_kills:+0"]
    run(baseline, 1).pop("results")
    checks = baseline_checks(baseline, "before", _results(new, 1), run_index=1)
    assert [(c.name, c.ok) for c in checks] == [("baseline", False)]
    assert checks[0].detail.startswith("nothing to compare: run 1 of the baseline, before, has no results")
