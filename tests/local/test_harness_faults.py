"""Faults through `elves run` against the real local stack: freezing the gateway for 3 s ("test
the tester") shows as p99 above 1 s while k6 drops no iteration. (A scale to 0 and back is
case 3's, in test_results_shapes.py: one run serves both.)

Why 3 s: requests that arrive during the freeze wait for what is left of it, so only those of
the first (pause - 1 s) take over a second. At 1.5 s that was 1.25% of a 40 s run, so p99 sat
on the edge (971 ms in one CI run); at 3 s it was 5% of 40 s.

Why 20 s: the share of slow requests is what the p99 reads, and a shorter load makes it larger
(10%) while the p50's side stays nine tenths fast; no assertion needs the load's length, so the
40 s it had only waited (the freeze still lands mid-load, 8 s in, with 9 s of load after it)."""

from __future__ import annotations

from test_harness_kit import loadtest, run_elves


def test_a_frozen_gateway_raises_p99_above_a_second_without_dropping_iterations(local_stack, tmp_path):
    local_stack.wait_ready()
    run = run_elves(tmp_path, loadtest("pause-gateway", {
        "system": {"replicas": {"gateway": 1}},
        "load": {"scenario": "system-mix", "rate": "240/min", "duration": "20s", "users": 3},
        "faults": [{"at": "8s", "pause": {"deployment": "gateway", "for": "3s"}}],
        "slo": [{"metric": "http_req_duration_p99", "op": ">", "value": "1s"},
                {"metric": "dropped_iterations", "op": "==", "value": 0},
                {"metric": "lost_requests", "op": "==", "value": 0}],
    }))
    assert run.exit_code == 0, run.output
    assert run.check("http_req_duration_p99")["observed"] > 1.0
    assert run.run_results()["droppedIterations"] == 0
    assert run.run_results()["total"]["p50"] < 1.0  # only the frozen moment is slow
