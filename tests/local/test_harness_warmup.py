"""The measured warm-up on the real local stack: a breakpoint ramp on JVMs that have just started
(spec.reset restarts the services, as ./deployments.sh --local leaves them) first runs a warm-up
k6 of its own, stops it as soon as the JIT and the p99 have settled (before its bound), then
ramps; the report says how long the warm-up took and gives the breakpoint of the warm system, or
says it could not warm up within the bound and marks the breakpoint. Timings are not asserted:
they are the machine's (the test prints them)."""

from __future__ import annotations

from datetime import datetime

from elves.engine.results.warmup import JIT_SETTLED_MS_PER_SECOND, SETTLED_HOLD_SECONDS
from test_harness_kit import loadtest, run_elves

# Room to settle early and show it: the constant load is reached at 10 s, its two 20 s windows
# end at 50 s at the earliest and the 15 s hold at 65 s, so a warm-up that settles at 50 or 55 s
# stops before this bound; one that does not runs it out. Both outcomes fit, and no assertion
# needs more (75 s only waited longer on the cold stacks that do not settle).
WARMUP_BOUND_SECONDS = 70
# The ramp runs in full after the warm-up (the warm-up never eats the plan), so it need only be
# long enough to be a breakpoint ramp: warmupTimeout must still be shorter than the duration,
# and a second longer is the shortest the model accepts. No assertion reads the ramp's length.
LOAD_SECONDS = WARMUP_BOUND_SECONDS + 1


def seconds(run: dict, field: str) -> float:
    return datetime.fromisoformat(run[field]).timestamp()


def test_a_breakpoint_ramp_on_cold_jvms_warms_up_until_settled_or_says_it_could_not(local_stack, tmp_path):
    local_stack.wait_ready()
    run = run_elves(tmp_path, loadtest("cold-breakpoint", {
        "reset": True,
        "load": {"scenario": "system-mix", "mix": {"getData": 1, "getStatus": 40, "getHistory": 40, "getAllHistory": 10},
                 "profile": "breakpoint", "rate": "300/s", "duration": f"{LOAD_SECONDS}s",
                 "warmupTimeout": f"{WARMUP_BOUND_SECONDS}s", "users": 20},
        "drain": {"timeout": "3m"},
        "slo": [{"metric": "http_req_duration_p99", "op": "<", "value": "50ms"}],
    }))
    # Passed, failed, or limited by k6 (a ramp past the knee may run out of VUs): the harness ran it.
    assert run.exit_code in (0, 1, 3), run.output
    status_run = run.status["runs"][0]
    results = run.run_results()
    settling = results["warmupSettling"]
    print(f"warm-up: settled={settling['settled']} after {settling.get('settledAfterSeconds')} s, lasted"
          f" {settling['lastedSeconds']} s of its {WARMUP_BOUND_SECONDS} s bound; {settling}")
    # Every service's JIT was read: the metric and its query hold on the real services.
    assert set(settling["jitMsPerSecond"]) == {"gateway", "registry", "ingestor"}, settling
    assert settling["timeoutSeconds"] == WARMUP_BOUND_SECONDS
    # The warm-up was a k6 run of its own, over before the load's began; its span is what the
    # results leave out.
    warm_start, warm_end = seconds(status_run, "warmupStartedAt"), seconds(status_run, "warmupEndedAt")
    assert warm_end <= seconds(status_run, "loadStartedAt")
    assert abs(results["warmupSeconds"] - (warm_end - warm_start)) < 0.01
    assert abs(settling["lastedSeconds"] - (warm_end - warm_start)) < 0.01
    # One ledger counts both k6 runs: every 2xx answer, the warm-up's and the load's, accepted and persisted.
    ledger, warm, total = results["ledger"], results["warmup"], results["total"]
    assert warm["requests"] > 0 and ledger["accepted"] == warm["ok"] + total["ok"], (ledger, warm, total)
    assert ledger["lostRequests"] == 0 and ledger["lostLogs"] == 0, ledger
    # No breakpoint when the ramp held to its peak: the verdict then has none.
    breakpoint = run.status["verdict"].get("breakpoint")
    if settling["settled"]:
        # Two 20 s windows of the constant load (reached at 10 s) at the earliest; then held for
        # 15 s before it was stopped, and stopped before its bound: the test ended sooner.
        assert 50 <= settling["settledAfterSeconds"] <= WARMUP_BOUND_SECONDS, settling
        assert settling["settledAfterSeconds"] + SETTLED_HOLD_SECONDS <= settling["lastedSeconds"], settling
        assert all(ms < JIT_SETTLED_MS_PER_SECOND for ms in settling["jitMsPerSecond"].values()), settling
        assert "the JVMs settled after" in run.output, run.output
        if settling["lastedSeconds"] < WARMUP_BOUND_SECONDS:
            assert "the warm-up stopped once settled, after" in run.output, run.output
        assert breakpoint is None or breakpoint["warm"] is True
    else:
        assert settling["lastedSeconds"] >= WARMUP_BOUND_SECONDS, settling
        assert settling["reason"] and "NOT SETTLED" in run.output, run.output
        assert breakpoint is None or (breakpoint["warm"] is False and "may be the JIT's" in run.output), run.output
