"""Floors and request counts: an honest rerun of the same LoadTest passes the gate. A relative
rule crosses only past its absolute floor too (the drain's poll step, a few queued messages, a
few milliseconds of p99), and an endpoint's p99 and error rate are judged only when it made
enough requests in both runs. For `elves compare` (the installed command) and `spec.baseline`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from elves.engine.results.compare import (BREACHED, INCOMPARABLE, PASSED, CompareError, baseline_checks, html_section,
                                          parse_thresholds, summary_status, text_lines)
from elves.engine.models.units import parse_duration
from elves.engine.runner import Intervals
from elves.local.prometheus_config import SCRAPE_INTERVAL
from summary_testkit import WORK_QUEUE, breaches, judged, pair, results, write

ELVES = Path(sys.executable).parent / "elves"
IDLE_DRAIN = 2.0019750595092773  # the endurance case's drain: one poll step, nothing left to drain


def _honest_rerun() -> tuple[dict, dict]:
    """The gate-p99-100ms case (its drain 4.02 s, its work queue at most 3 messages) against a
    baseline of the same LoadTest that drained at the first poll with an empty queue; the new
    run's one-request getUser twice as slow and its total p99 5 % higher."""
    baseline, new = pair()
    results(baseline)["drainSeconds"] = IDLE_DRAIN
    results(baseline)["queues"][WORK_QUEUE]["max"] = 0.0
    results(new)["endpoints"]["getUser"]["p99"] *= 2
    results(new)["total"]["p99"] *= 1.05
    assert results(new)["drainSeconds"] > 4 and results(new)["queues"][WORK_QUEUE]["max"] == 3
    return baseline, new


def _elves_compare(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ELVES), "compare", *args], capture_output=True, text=True, timeout=60)


def _row(out: str, scope: str, figure: str) -> str:
    return next(line for line in out.splitlines() if line.split()[:len(scope.split()) + 1] == [*scope.split(), figure])


def test_an_honest_rerun_passes_and_the_table_says_why(tmp_path):
    baseline, new = _honest_rerun()
    before, after = write(tmp_path / "before", baseline), write(tmp_path / "after", new)
    passed = _elves_compare(str(before), str(after))
    assert passed.returncode == 0, passed.stdout
    out = passed.stdout
    assert "drain:+50%:floor=15s" in _row(out, "total", "drain") and "+101.0 %" in _row(out, "total", "drain")
    assert "deepest_queue:+50%:floor=10" in _row(out, "total", "deepest_queue")
    user = _row(out, "endpoint getUser", "p99")
    assert "p99:+10%:floor=5ms:n=100: too few requests to judge (n=1)" in user and user.endswith("not judged")
    # Endpoints of 24 to 83 requests are judged by the small-sample rules; getUser's one request is named.
    assert out.splitlines()[-1] == "As good as the baseline: 54 figure(s) under 19 rule(s), none crossed or missing."
    assert out.splitlines()[-2] == ("Not judged, too few requests for any rule (fewer than 5, or a figure no"
                                    " small-sample rule covers): endpoint getUser errors (n=1); endpoint getUser p99"
                                    " (n=1).")
    assert "endpoint getData p99 (n=83)" in out.splitlines()[-3]
    assert "p99:+10%:floor=5ms:n=100: n=83, judged by its small-sample rule" in _row(out, "endpoint getData", "p99")

    # The same two runs without the floors and the request count: what made users turn the gate off.
    strict = _elves_compare(str(before), str(after), "--fail-on",
                            "drain:+50%:floor=0,deepest_queue:+50%:floor=0,p99:+10%:floor=0:n=0")
    assert strict.returncode == 1
    assert [line.split(":")[0] for line in strict.stdout.splitlines() if line.startswith("CROSSED")] == [
        "CROSSED total deepest_queue", "CROSSED total drain", "CROSSED endpoint getUser p99"]


def test_the_html_section_shows_an_endpoint_too_quiet_to_judge_apart_from_a_breach():
    html = html_section(judged(*_honest_rerun()))
    assert ("<td>p99:+10%:floor=5ms:n=100: too few requests to judge (n=1)</td><td><span class='muted'>not judged"
            in html)


def test_the_in_run_gate_passes_an_honest_rerun_with_the_same_floors():
    baseline, new = _honest_rerun()
    checks = baseline_checks(baseline, "before", summary_status(new).runs[0].results)
    assert checks and all(c.ok for c in checks), [c for c in checks if not c.ok]
    drain = next(c for c in checks if c.name == "baseline drain:+50%:floor=15s")
    assert drain.target == "rises by at most 50 % (or 15s, if more) against before"

    results(new)["drainSeconds"] = IDLE_DRAIN + 15.5
    failed = [c for c in baseline_checks(baseline, "before", summary_status(new).runs[0].results) if not c.ok]
    assert [(c.name, c.detail) for c in failed] == [
        ("baseline drain:+50%:floor=15s", "total drain: 2.00s in before, 17.50s now (+774.2 %)")]


def test_the_in_run_gate_with_a_users_rule_on_an_endpoint_too_quiet_to_judge_fails():
    baseline, new = _honest_rerun()
    rule = "p99{getUser}:+10%"
    check = next(c for c in baseline_checks(baseline, "before", summary_status(new).runs[0].results, rule)
                 if "getUser" in c.name)
    assert not check.ok and check.detail == "endpoint getUser p99: too few requests to judge (n=1)"
    comparison = judged(baseline, new, rule)
    assert comparison.outcome == INCOMPARABLE
    assert text_lines(comparison)[-1] == ("Nothing to compare for rule p99{getUser}:+10%:floor=5ms:n=100: every"
                                          " endpoint it watches made too few requests to judge (n=1; :n=1 judges"
                                          " them anyway).")
    judged_anyway = judged(baseline, new, rule + ":n=1")
    assert breaches(judged_anyway) == [("p99{getUser}:+10%:floor=5ms:n=1", "endpoint getUser", "p99", "crossed")]


# --- each floor at its boundary, both sides ---------------------------------------------

@pytest.mark.parametrize("before, after, outcome", [
    (IDLE_DRAIN, IDLE_DRAIN + 15.0, PASSED),  # +750 %, but within the floor
    (IDLE_DRAIN, IDLE_DRAIN + 15.1, BREACHED),
    (40.0, 60.0, PASSED),  # past the floor, but +50 %
    (40.0, 60.5, BREACHED),
])
def test_the_drain_crosses_past_50_percent_and_15_seconds(before, after, outcome):
    baseline, new = pair()
    results(baseline)["drainSeconds"], results(new)["drainSeconds"] = before, after
    comparison = judged(baseline, new)
    assert comparison.outcome == outcome, breaches(comparison)


@pytest.mark.parametrize("before, after, outcome", [
    (0.0, 10.0, PASSED),  # a rise from 0, within the floor
    (0.0, 11.0, BREACHED),
    (30.0, 45.0, PASSED),  # past the floor, but +50 %
    (30.0, 46.0, BREACHED),
    (8.0, 18.0, PASSED),  # +125 %, within the floor
])
def test_the_deepest_queue_crosses_past_50_percent_and_10_messages(before, after, outcome):
    baseline, new = pair()
    results(baseline)["queues"][WORK_QUEUE]["max"], results(new)["queues"][WORK_QUEUE]["max"] = before, after
    comparison = judged(baseline, new)
    assert comparison.outcome == outcome, breaches(comparison)


@pytest.mark.parametrize("before, after, outcome", [
    (0.020, 0.0249, PASSED),  # +24.5 %, within 5 ms
    (0.020, 0.0251, BREACHED),
    (0.100, 0.1099, PASSED),  # past 5 ms, but within 10 %
    (0.100, 0.1101, BREACHED),
])
def test_the_p99_crosses_past_10_percent_and_5_ms(before, after, outcome):
    baseline, new = pair()
    results(baseline)["total"]["p99"], results(new)["total"]["p99"] = before, after
    comparison = judged(baseline, new)
    assert comparison.outcome == outcome, breaches(comparison)


@pytest.mark.parametrize("before, after, judged_", [(100, 100, True), (99, 100, False), (100, 99, False)])
def test_an_endpoints_p99_is_judged_from_100_requests_in_both_runs(before, after, judged_):
    baseline, new = pair()
    results(baseline)["endpoints"]["getData"]["requests"] = before
    results(new)["endpoints"]["getData"]["requests"] = after
    results(new)["endpoints"]["getData"]["p99"] *= 2
    crossed = [("p99:+10%:floor=5ms:n=100", "endpoint getData", "p99", "crossed")]
    assert breaches(judged(baseline, new)) == (crossed if judged_ else [])


@pytest.mark.parametrize("requests, judged_", [(200, True), (199, False)])
def test_an_endpoints_error_rate_is_judged_from_200_requests_in_both_runs(requests, judged_):
    baseline, new = pair()
    for summary in (baseline, new):
        results(summary)["endpoints"]["getStatus"]["requests"] = requests
    results(new)["endpoints"]["getStatus"]["errorRate"] = 0.006  # one or two failed requests more
    crossed = [("errors:+0.5pp:n=200", "endpoint getStatus", "errors", "crossed")]
    assert breaches(judged(baseline, new)) == (crossed if judged_ else [])


def test_the_total_is_judged_whatever_its_requests_and_a_missing_total_p99_is_missing():
    baseline, new = pair()
    for summary in (baseline, new):
        results(summary)["total"]["requests"] = 5
    results(new)["total"]["p99"] = 0.5
    assert breaches(judged(baseline, new)) == [("p99:+10%:floor=5ms:n=100", "total", "p99", "crossed")]
    del results(new)["total"]["p99"]
    assert breaches(judged(baseline, new)) == [("p99:+10%:floor=5ms:n=100", "total", "p99", "missing")]


# --- overrides ------------------------------------------------------------------------

def test_fail_on_sets_a_floor_and_a_request_count_of_its_own():
    baseline, new = _honest_rerun()
    assert breaches(judged(baseline, new, "drain:+50%:floor=1s")) == [
        ("drain:+50%:floor=1s", "total", "drain", "crossed")]
    assert breaches(judged(baseline, new, "deepest_queue:+50%:floor=2")) == [
        ("deepest_queue:+50%:floor=2", "total", "deepest_queue", "crossed")]
    assert breaches(judged(baseline, new, "p99{getUser}:+50%:floor=1ms:n=1")) == [
        ("p99{getUser}:+50%:floor=1ms:n=1", "endpoint getUser", "p99", "crossed")]
    assert judged(baseline, new, "drain:+150%").outcome == PASSED  # keeps the default's 15 s floor


def test_the_default_drain_floor_spans_an_idle_drain_on_the_local_platform():
    """An idle drain reads from one poll step to a scrape interval plus a step: two reruns of
    one load differ by up to that, and the floor must not call it a regression."""
    drain = next(t for t in parse_thresholds(None) if t.figure == "drain")
    assert drain.floor > parse_duration(SCRAPE_INTERVAL) + Intervals().draining


@pytest.mark.parametrize("text, message", [
    ("drain:kept:floor=1s", "kept is for yes/no"), ("drained:kept:floor=1s", "floor= is for relative rules"),
    ("restarts:+1:floor=2", "floor= is for relative rules"), ("p99:250ms:floor=5ms", "floor= is for relative"),
    ("p99:+10%:floor=5", "is not a duration"), ("errors:+50%:floor=0.5", "percentage points"),
    ("deepest_queue:+50%:floor=ten", "is not a number"), ("p99:+10%:floor=1ms:floor=2ms", "floor= given twice"),
    ("p99:+10%:min=5ms", "write :floor=FLOOR or :n=N"), ("depth_max:+50%:n=10", "n= is for the figures of endpoints"),
    ("p99{total}:+10%:n=10", "the total is always judged"), ("p99:+10%:n=ten", "not a whole number"),
    ("p99:off:n=1", "off takes no floor= or n="),
])
def test_bad_floors_and_counts_name_the_part_at_fault(text, message):
    with pytest.raises(CompareError, match=message.replace("+", r"\+")):
        parse_thresholds(text)


def test_the_help_lists_the_floors_and_how_to_write_one():
    out = _elves_compare("--help").stdout
    assert "FIGURE[{SELECTOR}]:VALUE[:floor=FLOOR][:n=N]" in out
    for rule in ("p99:+10%:floor=5ms:n=100", "errors:+0.5pp:n=200", "deepest_queue:+50%:floor=10",
                 "drain:+50%:floor=15s"):
        assert rule in out
