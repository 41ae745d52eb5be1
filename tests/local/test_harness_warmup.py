"""The measured warm-up on the real local stack: a breakpoint ramp on JVMs that have just started
(spec.reset restarts the services, as ./deployments.sh --local leaves them) reports when the
JIT and the p99 settled and the breakpoint of the warm system, or says it could not warm up and
marks the breakpoint. Timings are not asserted: they are the machine's."""

from __future__ import annotations

from elves.engine.warmup import JIT_SETTLED_MS_PER_SECOND
from test_harness_kit import loadtest, run_elves

WARMUP_BOUND_SECONDS = 75


def test_a_breakpoint_ramp_on_cold_jvms_reports_the_warmed_system_or_says_it_could_not(local_stack, tmp_path):
    local_stack.wait_ready()
    run = run_elves(tmp_path, loadtest("cold-breakpoint", {
        "reset": True,
        "load": {"scenario": "system-mix", "mix": {"getData": 1, "getStatus": 40, "getHistory": 40, "getAllHistory": 10},
                 "profile": "breakpoint", "rate": "300/s", "duration": "2m30s",
                 "warmupTimeout": f"{WARMUP_BOUND_SECONDS}s", "users": 20},
        "drain": {"timeout": "3m"},
        "slo": [{"metric": "http_req_duration_p99", "op": "<", "value": "50ms"}],
    }))
    # Passed, failed, or limited by k6 (a ramp past the knee may run out of VUs): the harness ran it.
    assert run.exit_code in (0, 1, 3), run.output
    settling = run.run_results()["warmupSettling"]
    # Every service's JIT was read: the metric and its query hold on the real services.
    assert set(settling["jitMsPerSecond"]) == {"gateway", "registry", "ingestor"}, settling
    assert settling["timeoutSeconds"] == WARMUP_BOUND_SECONDS
    breakpoint = run.status["verdict"]["breakpoint"]
    if settling["settled"]:
        # Two 20 s windows of the constant load (reached at 10 s) at the earliest.
        assert 50 <= settling["settledAfterSeconds"] <= WARMUP_BOUND_SECONDS, settling
        assert all(ms < JIT_SETTLED_MS_PER_SECOND for ms in settling["jitMsPerSecond"].values()), settling
        assert "the JVMs settled after" in run.output, run.output
        assert breakpoint is None or breakpoint["warm"] is True
    else:
        assert settling["reason"] and "NOT SETTLED" in run.output, run.output
        assert breakpoint is None or (breakpoint["warm"] is False and "may be the JIT's" in run.output), run.output
