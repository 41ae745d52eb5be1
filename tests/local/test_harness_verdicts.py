"""Failed vs Error from `elves run` against the real local stack: an objective the system
cannot meet ends Failed (exit 1) naming the check and its observed value; a script that
cannot run ends Error (exit 2) with k6's reason. Neither hangs."""

from __future__ import annotations

import re

from test_harness_kit import loadtest, run_elves

# A p99 under 1 ms is out of reach at any length; 15 calls are enough for a p99 to miss it.
SHORT_LOAD = {"scenario": "system-mix", "rate": "60/min", "duration": "15s", "users": 3}


def test_an_impossible_objective_fails_naming_the_check_and_what_was_observed(local_stack, tmp_path):
    local_stack.wait_ready()
    run = run_elves(tmp_path, loadtest("impossible-p99", {
        "load": SHORT_LOAD,
        "slo": [{"metric": "http_req_duration_p99", "op": "<", "value": "1ms"},
                {"metric": "lost_requests", "op": "==", "value": 0}],
    }))
    assert run.exit_code == 1, run.output
    assert "Verdict: FAILED (1/2 checks); missed: http_req_duration_p99" in run.output
    check = run.check("http_req_duration_p99")
    assert check["ok"] is False and check["target"] == "< 1ms" and check["observed"] > 0.001
    # The table line names the check with the observed latency in its unit.
    assert re.search(r"^http_req_duration_p99\s+[\d.]+m?s\s+< 1ms\s+MISSED", run.output, re.MULTILINE), run.output
    assert run.status["phase"] == "Failed"


def test_a_script_error_is_a_harness_error_with_the_reason(local_stack, tmp_path):
    local_stack.wait_ready()
    (tmp_path / "broken.js").write_text(
        "export const options = { scenarios: JSON.parse(__ENV.ELVES_K6_SCENARIOS) };\n"
        "export function default_() { notDefinedAnywhere(); }\n"
        "this is not javascript\n")
    run = run_elves(tmp_path, loadtest("script-error", {
        "load": {"script": {"path": "broken.js"}, "rate": "60/min", "duration": "30s"},
    }))
    assert run.exit_code == 2, run.output
    assert "Verdict: ERROR (LoadError)" in run.output
    assert "script error" in run.output or "SyntaxError" in run.output
    (condition,) = [c for c in run.status["conditions"] if c["type"] == "HarnessError"]
    assert condition["reason"] == "LoadError"
    assert run.status["restored"] is True
