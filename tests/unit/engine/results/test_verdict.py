"""The verdict: comparison ops, observed values per metric, defaults, sweep table, breakpoint rules."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from elves.engine.models.objectives import Objective
from elves.engine.models.status import (Check, DeploymentResult, EndpointResult, Ledger, QueueResult, RunResults,
                                        RunStatus, Verdict, Window)
from elves.engine.results.verdict import (compare, evaluate, first_sustained_breach, sweep_answers, sweep_table, target_text,
                                          timeline_query)


def objective(**fields) -> Objective:
    return Objective.model_validate(fields)


def results(**overrides) -> RunResults:
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    base = dict(
        window=Window(start=now, end=now), load_seconds=60.0, requests=100, rate=100 / 60, error_rate=0.02,
        dropped_iterations=0,
        endpoints={"getData": EndpointResult(requests=50, ok=50, rate=50 / 60, error_rate=0.0, p99=0.08),
                   "getHistory": EndpointResult(requests=50, ok=48, failed=2, rate=50 / 60, error_rate=0.04, p99=0.3)},
        total=EndpointResult(requests=100, ok=98, failed=2, rate=100 / 60, error_rate=0.02, p50=0.02, p99=0.25,
                             mean=0.05),
        queues={"elves.ingestor.data.in": QueueResult(max=40, final=0),
                "elves.ingestor.data.in.dlq": QueueResult(max=2, final=2)},
        deployments={"ingestor": DeploymentResult(restarts=2, oom_kills=1, unready_seconds=42.0),
                     "gateway": DeploymentResult(restarts=1, unready_seconds=12.0), "registry": DeploymentResult()},
        ledger=Ledger(requests_accepted=50, results_done=49, lost_requests=1, logs_expected=98, logs_persisted=98,
                      duplicates=3),
        drain_seconds=12.5,
    )
    base.update(overrides)
    return RunResults(**base)


@pytest.mark.parametrize("op, observed, target, ok", [
    ("<", 1, 2, True), ("<", 2, 2, False), ("<=", 2, 2, True), ("==", 0.1 + 0.2, 0.3, True),
    ("!=", 1, 1, False), ("!=", 1, 2, True), (">=", 2, 2, True), (">", 2, 2, False), ("<", None, 2, False),
])
def test_ops(op, observed, target, ok):
    assert compare(observed, op, target) is ok


def test_defaults_when_slo_is_absent_and_every_builtin_metric():
    checks = evaluate([objective(**o) for o in (
        {"metric": "lost_requests", "op": "==", "value": 0},
        {"metric": "http_req_failed_rate", "op": "<", "value": 0.01},
        {"metric": "dropped_iterations", "op": "==", "value": 0},
        {"metric": "http_req_failed_rate", "endpoint": "getData", "op": "<", "value": 0.01},
        {"metric": "http_req_duration_p99", "endpoint": "getHistory", "op": "<", "value": "100ms"},
        {"metric": "http_req_duration_p99", "op": "<", "value": "1s"},
        {"metric": "http_reqs_rate", "op": ">=", "value": 1.5},
        {"metric": "queue_depth_max", "op": "<", "value": 500},
        {"metric": "queue_depth_final", "queue": "elves.ingestor.data.in.dlq", "op": "==", "value": 0},
        {"metric": "queue_depth_final", "op": "==", "value": 0},
        {"metric": "pod_restarts", "deployment": "ingestor", "op": "==", "value": 0},
        {"metric": "pod_restarts", "op": "<=", "value": 3},
        {"metric": "oom_kills", "op": "==", "value": 0},
        {"metric": "drain_seconds", "op": "<", "value": "1m"},
        {"metric": "duplicates", "op": ">=", "value": 0},
        {"metric": "lost_logs", "op": "==", "value": 0},
        {"metric": "http_req_duration_p99", "endpoint": "getImage", "op": "<", "value": "1s"},
        {"metric": "http_req_duration_mean", "op": "<", "value": "100ms"},
        {"metric": "throughput_stability", "op": ">=", "value": 0.9},
        {"metric": "unready_seconds", "op": "<", "value": "1m"},
        {"metric": "unready_seconds", "deployment": "gateway", "op": "<", "value": "10s"},
        {"metric": "unready_seconds", "deployment": "registry", "op": "<", "value": "10s"},
    )], results()).checks
    table = {c.name: (c.observed, c.ok) for c in checks}
    assert table == {
        "lost_requests": (1, False),
        "http_req_failed_rate": (0.02, False),
        "dropped_iterations": (0, True),
        "http_req_failed_rate{getData}": (0.0, True),
        "http_req_duration_p99{getHistory}": (0.3, False),
        "http_req_duration_p99": (0.25, True),
        "http_reqs_rate": (pytest.approx(100 / 60), True),
        "queue_depth_max": (40, True),
        "queue_depth_final{elves.ingestor.data.in.dlq}": (2, False),
        "queue_depth_final": (0, True),  # without a queue named: the work queues
        "pod_restarts{ingestor}": (2, False),
        "pod_restarts": (3, True),
        "oom_kills": (1, False),
        "drain_seconds": (12.5, True),
        "duplicates": (3, True),
        "lost_logs": (0, True),
        "http_req_duration_p99{getImage}": (None, False),
        "http_req_duration_mean": (0.05, True),
        "throughput_stability": (None, False),  # a 60 s load has no last minute apart from its first
        "unready_seconds": (42, True),  # without a deployment named: the longest of all
        "unready_seconds{gateway}": (12, False),
        "unready_seconds{registry}": (None, False),  # no replica samples: not a pass
    }
    assert [c.detail for c in checks if c.name == "throughput_stability"] == [
        "needs a load of 2 minutes or more with answers in its first"]
    assert [c.detail for c in checks if c.name == "http_req_duration_p99{getImage}"] == ["no requests to endpoint getImage"]
    assert [c.target for c in checks][:5] == ["== 0", "< 0.01", "== 0", "< 0.01", "< 100ms"]


def test_without_ledger_or_drain_the_checks_fail_and_say_why():
    verdict = evaluate([objective(metric="lost_requests", op="==", value=0),
                        objective(metric="drain_seconds", op="<", value=60)],
                       results(ledger=None, drain_completed=False, drain_seconds=None))
    assert [(c.name, c.ok, c.detail) for c in verdict.checks] == [
        ("lost_requests", False, "the registry's ledger was unavailable"),
        ("drain_seconds", False, "the system did not drain before the timeout"),
        ("drain_completed", False, "queues not empty or ledger incomplete when the drain timed out"),
    ]
    assert not verdict.passed


def test_a_failed_request_rate_says_why_requests_failed_most_frequent_first():
    endpoints = {
        "getData": EndpointResult(requests=141, ok=114, failed=27, error_rate=27 / 141,
                                  failures={"k6 1000 (no answer: EOF or another error)": 27}),
        "getStatus": EndpointResult(requests=141, ok=138, failed=3, error_rate=3 / 141,
                                    failures={"HTTP 503": 2, "HTTP 504": 1}),
        "getHistory": EndpointResult(requests=136, ok=136, error_rate=0.0),
    }
    verdict = evaluate([objective(metric="http_req_failed_rate", op="<", value=0.01),
                        objective(metric="http_req_failed_rate", endpoint="getStatus", op="<", value=0.01),
                        objective(metric="http_req_failed_rate", endpoint="getHistory", op="<", value=0.01)],
                       results(endpoints=endpoints))
    assert [c.detail for c in verdict.checks] == [
        "failed requests: getData 27 x k6 1000 (no answer: EOF or another error); getStatus 2 x HTTP 503;"
        " getStatus 1 x HTTP 504",
        "failed requests: getStatus 2 x HTTP 503; getStatus 1 x HTTP 504",
        "",
    ]


def test_an_empty_objective_list_passes():
    assert evaluate([], results()).passed


def test_target_text_keeps_what_was_written():
    assert target_text(objective(metric="drain_seconds", op="<", value="2m")) == "< 2m"
    assert target_text(objective(metric="lost_requests", op="==", value=0)) == "== 0"


def test_breakpoint_needs_a_sustained_breach():
    slo = objective(metric="http_req_failed_rate", op="<", value=0.01)
    noisy = [(0, 0.0), (5, 0.2), (10, 0.0), (15, 0.0), (20, 0.02), (25, 0.03), (30, None), (35, 0.05), (40, 0.0)]
    assert first_sustained_breach(noisy, slo) == 20
    assert first_sustained_breach([(0, 0.2), (5, 0.0), (10, 0.3)], slo) is None


def run_with(index: int, point: dict, throughput: float | None, passed: bool = True) -> RunStatus:
    res = results()
    res.throughput = throughput
    return RunStatus(index=index, test_id=f"local/s/{index}", point=point, results=res,
                     verdict=Verdict(passed=passed, checks=[Check(name="x", target="== 0", ok=passed)]))


def test_sweep_table_speedup_and_efficiency_against_the_first_point():
    rows = sweep_table([run_with(0, {"system.replicas.ingestor": 1}, 2.0),
                        run_with(1, {"system.replicas.ingestor": 3}, 5.4),
                        run_with(2, {"system.replicas.ingestor": 5}, 6.0, passed=False)])
    assert [(r.speedup, r.efficiency) for r in rows] == [
        (1.0, 1.0), (pytest.approx(2.7), pytest.approx(0.9)), (pytest.approx(3.0), pytest.approx(0.6))]
    assert [r.passed for r in rows] == [True, True, False]
    assert rows[0].queue_depth_max == 40 and rows[0].lost == 1 and rows[0].p99 == 0.25


def test_sweep_table_on_a_grid_and_on_words():
    grid = sweep_table([run_with(0, {"a": 1, "b": "2Gi"}, 1.0), run_with(1, {"a": 2, "b": "4Gi"}, 2.0)])
    assert grid[1].efficiency == pytest.approx(0.5)  # 2x the work from 4x the resources
    words = sweep_table([run_with(0, {"system.env.ingestor.MODE": "fast"}, 1.0),
                         run_with(1, {"system.env.ingestor.MODE": "safe"}, 0.5)])
    assert (words[1].speedup, words[1].efficiency) == (0.5, None)


def test_a_sweep_of_workers_under_two_loads_says_how_many_held_each_load():
    worker, rate = "system.replicas.orders-worker", "load.rate"
    rows = sweep_table([run_with(0, {worker: 1, rate: "60/min"}, 1.0), run_with(1, {worker: 1, rate: "120/min"}, 1.2,
                                                                             passed=False),
                        run_with(2, {worker: 2, rate: "60/min"}, 1.0), run_with(3, {worker: 2, rate: "120/min"}, 2.0),
                        run_with(4, {worker: 3, rate: "60/min"}, 1.0), run_with(5, {worker: 3, rate: "120/min"}, 2.1)])
    # Each load against its own first point: the rate is the load, not the capacity added.
    assert [r.speedup for r in rows] == [1.0, 1.0, 1.0, pytest.approx(2.0 / 1.2), 1.0, pytest.approx(2.1 / 1.2)]
    assert rows[3].efficiency == pytest.approx(2.0 / 1.2 / 2)
    assert sweep_answers(rows) == [
        "load.rate = 60/min: system.replicas.orders-worker = 1 held (the first point that did)",
        "load.rate = 120/min: system.replicas.orders-worker = 2 held (the first point that did)"]
    assert sweep_answers(rows[1:2]) == ["load.rate = 120/min: no point held"]
    assert sweep_answers(sweep_table([run_with(0, {rate: "60/min"}, 1.0)])) == []  # a load sweep asks no "how many"


def test_the_queue_depth_timeline_follows_the_work_queues_unless_a_queue_is_named():
    # A breakpoint on queue depth must not be found in a dead-letter queue that earlier tests filled.
    anywhere = timeline_query(objective(metric="queue_depth_max", op="<", value=500), "local/t/0", "elves")
    assert "elves\\\\.ingestor\\\\.data\\\\.in" in anywhere and "dlq" not in anywhere
    assert 'namespace="elves"' in anywhere  # the system's own queues, not another namespace's
    named = timeline_query(objective(metric="queue_depth_max", queue="elves.ingestor.data.in.dlq", op="<", value=1),
                           "local/t/0", "elves")
    assert "dlq" in named
