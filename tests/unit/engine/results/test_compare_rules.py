"""The gate's rules, one by one, on a committed summary.json with one field made worse: each
default rule catches its regression and nothing else fires; `--fail-on` loosens, narrows and
turns off what the user names."""

from __future__ import annotations

import pytest

from elves.engine.results.compare import BREACHED, PASSED, CompareError, parse_thresholds, text_lines
from summary_testkit import BUSY, WORK_QUEUE, breaches, judged, pair, results, run


def test_a_run_as_good_as_its_baseline_passes_every_rule():
    baseline, new = pair()
    comparison = judged(baseline, new)
    assert comparison.outcome == PASSED and breaches(comparison) == []
    watched = {line.row.figure for line in comparison.lines if line.rules}
    assert {"verdict", "present", "rate", "p99", "errors", "dropped", "duplicates", "restarts", "oom_kills",
            "deepest_queue", "drain", "drained", "lost_requests", "lost_logs"} <= watched


def test_verdict_passed_then_failed_is_a_breach():
    baseline, new = pair()
    run(baseline)["verdict"]["passed"] = True
    run(new)["verdict"]["passed"] = False
    comparison = judged(baseline, new)
    assert breaches(comparison) == [("verdict:kept", "total", "verdict", "crossed")]
    assert comparison.outcome == BREACHED
    run(baseline)["verdict"]["passed"] = False  # failed before and now: not worse than its baseline
    assert breaches(judged(baseline, new)) == []


def test_the_achieved_rate_may_fall_by_10_percent_of_the_total():
    baseline, new = pair()
    half = results(new)
    for scope in [half["total"], *half["endpoints"].values()]:
        scope["rate"] *= 0.5
    assert breaches(judged(baseline, new)) == [("rate{total}:-10%", "total", "rate", "crossed")]
    baseline, new = pair()
    results(new)["total"]["rate"] *= 0.91
    assert breaches(judged(baseline, new)) == []


def test_the_total_p99_may_rise_by_10_percent():
    baseline, new = pair()
    results(baseline)["total"]["p99"] = 0.100  # where 10 % is more than the 5 ms floor
    results(new)["total"]["p99"] = 0.120
    assert breaches(judged(baseline, new)) == [("p99:+10%:floor=5ms:n=100", "total", "p99", "crossed")]
    results(new)["total"]["p99"] = 0.109
    assert breaches(judged(baseline, new)) == []


def test_every_endpoints_p99_is_watched():
    baseline, new = pair(BUSY)
    results(new)["endpoints"]["getHistory"]["p99"] *= 5
    assert breaches(judged(baseline, new)) == [("p99:+10%:floor=5ms:n=100", "endpoint getHistory", "p99", "crossed")]


def test_every_endpoints_error_rate_may_rise_by_half_a_point():
    baseline, new = pair(BUSY)
    before = results(baseline)["endpoints"]["getStatus"]["errorRate"]
    results(new)["endpoints"]["getStatus"]["errorRate"] = before + 0.006
    assert breaches(judged(baseline, new)) == [("errors:+0.5pp:n=200", "endpoint getStatus", "errors", "crossed")]
    results(new)["endpoints"]["getStatus"]["errorRate"] -= 0.002
    assert breaches(judged(baseline, new)) == []


def test_an_endpoint_of_the_baseline_absent_from_the_new_run_is_missing():
    baseline, new = pair()
    del results(new)["endpoints"]["getUser"]
    comparison = judged(baseline, new)
    assert "MISSING endpoint getUser: in the baseline, absent from the new run (rule present:kept)" in \
        text_lines(comparison)
    assert breaches(comparison) == [("present:kept", "endpoint getUser", "present", "missing")]  # one request
    assert breaches(judged(new, baseline)) == []  # an endpoint the new run adds is no regression
    baseline, new = pair(BUSY)
    del results(new)["endpoints"]["getData"]  # 388 requests in the baseline: its figures are missing too
    assert breaches(judged(baseline, new)) == [
        ("present:kept", "endpoint getData", "present", "missing"),
        ("errors:+0.5pp:n=200", "endpoint getData", "errors", "missing"),
        ("p99:+10%:floor=5ms:n=100", "endpoint getData", "p99", "missing"),
    ]


def test_a_deployment_or_queue_absent_from_the_new_run_is_missing():
    baseline, new = pair()
    del results(new)["deployments"]["registry"]
    del results(new)["queues"]["elves.registry.applog.in"]
    assert breaches(judged(baseline, new)) == [
        ("present:kept", "queue elves.registry.applog.in", "present", "missing"),
        ("depth_max:+50%:floor=10", "queue elves.registry.applog.in", "depth_max", "missing"),
        ("depth_final:+50%:floor=10", "queue elves.registry.applog.in", "depth_final", "missing"),
        ("present:kept", "deployment registry", "present", "missing"),
        ("restarts:+0", "deployment registry", "restarts", "missing"),
        ("oom_kills:+0", "deployment registry", "oom_kills", "missing"),
    ]


def test_dropped_iterations_may_not_rise_from_0():
    baseline, new = pair()
    results(baseline)["droppedIterations"] = 0
    results(new)["droppedIterations"] = 500
    assert breaches(judged(baseline, new)) == [("dropped:+0", "total", "dropped", "crossed")]


def test_duplicates_may_not_rise_from_0():
    baseline, new = pair()
    results(baseline)["ledger"]["duplicates"] = 0
    results(new)["ledger"]["duplicates"] = 50
    assert breaches(judged(baseline, new)) == [("duplicates:+0", "ledger", "duplicates", "crossed")]


def test_restarts_may_not_rise():
    baseline, new = pair()
    results(new)["deployments"]["ingestor"]["restarts"] = results(baseline)["deployments"]["ingestor"]["restarts"] + 3
    assert breaches(judged(baseline, new)) == [("restarts:+0", "deployment ingestor", "restarts", "crossed")]


def test_oom_kills_may_not_rise():
    baseline, new = pair()
    results(new)["deployments"]["ingestor"]["oomKills"] = results(baseline)["deployments"]["ingestor"]["oomKills"] + 3
    assert breaches(judged(baseline, new)) == [("oom_kills:+0", "deployment ingestor", "oom_kills", "crossed")]


def test_the_deepest_work_queue_may_rise_by_half():
    baseline, new = pair()
    for summary, depth in ((baseline, 100.0), (new, 160.0)):  # past the 10-message floor
        results(summary)["queues"][WORK_QUEUE]["max"] = depth
    assert breaches(judged(baseline, new)) == [("deepest_queue:+50%:floor=10", "total", "deepest_queue", "crossed"),
                                               ("depth_max:+50%:floor=10", f"queue {WORK_QUEUE}", "depth_max", "crossed")]
    results(new)["queues"][WORK_QUEUE]["max"] = 140.0
    assert breaches(judged(baseline, new)) == []


def test_dead_letters_are_not_the_deepest_work_queue_but_are_gated():
    baseline, new = pair()
    results(new)["queues"][WORK_QUEUE + ".dlq"].update(max=1000.0, final=1000.0)
    assert breaches(judged(baseline, new)) == [
        ("dead_letters:+0", "total", "dead_letters", "crossed"),
        ("depth_max:+50%:floor=10", f"queue {WORK_QUEUE}.dlq", "depth_max", "crossed"),
        ("depth_final:+50%:floor=10", f"queue {WORK_QUEUE}.dlq", "depth_final", "crossed")]


def test_the_drain_may_take_half_as_long_again():
    baseline, new = pair()
    results(baseline)["drainSeconds"] = 40.0  # past the 15 s floor
    results(new)["drainSeconds"] = 65.0
    assert breaches(judged(baseline, new)) == [("drain:+50%:floor=15s", "total", "drain", "crossed")]
    results(new)["drainSeconds"] = 59.0
    assert breaches(judged(baseline, new)) == []


def test_a_drain_that_never_finished_is_a_breach():
    baseline, new = pair()
    results(new)["drainCompleted"] = False
    del results(new)["drainSeconds"]  # what the runner writes when the drain timed out
    assert breaches(judged(baseline, new)) == [("drain:+50%:floor=15s", "total", "drain", "missing"),
                                               ("drained:kept", "total", "drained", "crossed")]


@pytest.mark.parametrize("field, rule", [("lostRequests", "lost_requests:0"), ("lostLogs", "lost_logs:0")])
def test_anything_lost_fails_whatever_the_baseline_lost(field, rule):
    baseline, new = pair()
    results(baseline)["ledger"][field] = 2
    results(new)["ledger"][field] = 2
    figure = rule.split(":")[0]
    assert breaches(judged(baseline, new)) == [(rule, "ledger", figure, "crossed")]


def test_fail_on_replaces_the_default_of_the_figure_it_names():
    baseline, new = pair()
    results(new)["total"]["p99"] *= 1.2
    results(new)["endpoints"]["getData"]["p99"] *= 1.2
    assert judged(baseline, new, "p99:+25%").outcome == PASSED
    assert breaches(judged(baseline, new, "p99:+15%")) == []  # the default's floor: 21 ms -> 25 ms is within 5 ms
    assert [b[:2] for b in breaches(judged(baseline, new, "p99:+15%:floor=1ms:n=50"))] == [
        ("p99:+15%:floor=1ms:n=50", "total"), ("p99:+15%:floor=1ms:n=50", "endpoint getData")]


def test_a_narrower_rule_takes_the_place_of_the_wider_one_for_its_scope():
    baseline, new = pair()
    results(new)["endpoints"]["getUser"]["p99"] *= 5  # one request: its p99 is noise
    results(new)["endpoints"]["getData"]["p99"] *= 5
    wider = "p99:+10%:n=50"  # getData made 83 requests
    getdata = ("p99:+10%:floor=5ms:n=50", "endpoint getData", "p99", "crossed")
    assert breaches(judged(baseline, new, f"{wider},p99{{getUser}}:off")) == [getdata]
    assert breaches(judged(baseline, new, f"{wider},p99{{getUser}}:+300%:n=1")) == [
        getdata, ("p99{getUser}:+300%:floor=5ms:n=1", "endpoint getUser", "p99", "crossed")]
    assert breaches(judged(baseline, new, f"{wider},p99{{getUser}}:+500%:n=1")) == [getdata]


def test_a_rule_turned_off_lets_its_figure_change():
    baseline, new = pair()
    results(new)["deployments"]["ingestor"]["restarts"] = 7
    assert judged(baseline, new, "restarts:off").outcome == PASSED


def test_a_ceiling_holds_whatever_the_baseline():
    baseline, new = pair()
    results(baseline)["total"]["p99"] = 0.300
    results(new)["total"]["p99"] = 0.270  # better than the baseline, above the ceiling
    assert breaches(judged(baseline, new, "p99{total}:250ms")) == [("p99{total}:250ms", "total", "p99", "crossed")]


def test_the_defaults_and_the_users_rules_are_one_list():
    texts = [t.text for t in parse_thresholds("p99:+25%,restarts{ingestor}:+2")]
    assert "p99:+10%:floor=5ms:n=100" not in texts and "restarts:+0" in texts
    assert texts[-2:] == ["p99:+25%:floor=5ms:n=100", "restarts{ingestor}:+2"]  # the default's floor and n kept
    assert "rate{total}:-10%" not in [t.text for t in parse_thresholds("rate:-5%")]  # a wide rule replaces narrow ones


@pytest.mark.parametrize("text, message", [
    ("p99", "write FIGURE"), ("latency:+10%", "unknown figure"), ("p99:10%", "say +10% (a rise)"),
    ("rate:+1pp", "percentage points"), ("restarts:5ms", "is not +N%"), ("p99:fast", "is not a duration"),
    ("p99:kept", "kept is for yes/no figures"), ("verdict:+1", "verdict is yes/no"),
])
def test_bad_rules_name_the_part_at_fault(text, message):
    with pytest.raises(CompareError, match=message.replace("+", r"\+").replace("(", r"\(").replace(")", r"\)")):
        parse_thresholds(text)


def test_autoscaling_figures_are_compared_and_gated_when_the_user_asks():
    baseline, new = pair()
    results(baseline)["deployments"]["ingestor"]["scaling"] = {"autoscaler": "keda", "replicaSeconds": 400.0,
                                                                "replicaChanges": 2, "scaleUpLagSeconds": 20.0}
    results(new)["deployments"]["ingestor"]["scaling"] = {"autoscaler": "keda", "replicaSeconds": 600.0,
                                                           "replicaChanges": 6, "scaleUpLagSeconds": 45.0}
    comparison = judged(baseline, new)
    shown = {line.row.figure: (line.row.baseline, line.row.new) for line in comparison.lines
             if line.row.scope == "deployment ingestor"}
    assert (shown["replica_seconds"], shown["replica_changes"], shown["scale_up_lag"]) == \
        ((400.0, 600.0), (2, 6), (20.0, 45.0))
    assert breaches(comparison) == [], "no default rule judges what autoscaling costs"
    assert breaches(judged(baseline, new, "replica_seconds:+20%,scale_up_lag:+50%")) == [
        ("replica_seconds:+20%", "deployment ingestor", "replica_seconds", "crossed"),
        ("scale_up_lag:+50%", "deployment ingestor", "scale_up_lag", "crossed")]
