"""Analysis of a run window against a real Prometheus holding a known history (backfilled
with promtool; the history is described in engine_testkit.KnownRun)."""

from __future__ import annotations

import pytest

from elves.engine.results.analysis import AnalysisError, RunWindow, analyze, longest_unready
from elves.engine.results.ledger import ledger_complete, ledger_result, ledger_since
from elves.engine.models.objectives import Objective
from elves.engine.models.status import ReplicaPoint
from elves.engine.results.prometheus import Prometheus

from elves.engine.results.verdict import evaluate
from engine_testkit import RUN

T0, LOAD_START, LOAD_END, DRAIN_END = RUN.t0, RUN.load_start, RUN.load_end, RUN.drain_end
TEST_ID, INGESTOR_QUEUE = RUN.test_id, RUN.queue


WINDOW = RunWindow(TEST_ID, LOAD_START, LOAD_END, DRAIN_END, drain_seconds=25.0)
LEDGER = {"testId": TEST_ID, "requests": 120, "results": {"done": 118, "failed": 1}, "logs": 179,
          "logsByEndpoint": {"getData": 120, "getStatus": 59}, "duplicates": 2}


@pytest.fixture(scope="module")
def results(known_run_prometheus):
    return analyze(known_run_prometheus, WINDOW, LEDGER)


def test_k6_totals_are_exact_and_per_test_id(results):
    assert results.endpoints["getData"].requests == 120
    assert results.endpoints["getStatus"].requests == 63
    assert results.endpoints["getStatus"].failed == 3
    assert results.endpoints["getStatus"].error_rate == pytest.approx(3 / 63)
    assert results.requests == 183
    assert results.rate == pytest.approx(183 / 60)
    assert results.dropped_iterations == 0


def test_queue_depth_max_and_final_per_queue_including_dlq(results):
    assert results.queues[INGESTOR_QUEUE].max == 302  # ready + unacked
    assert results.queues[INGESTOR_QUEUE].final == 0
    assert results.queues[INGESTOR_QUEUE + ".dlq"].max == 1
    assert results.queues[INGESTOR_QUEUE + ".dlq"].final == 1


def test_restarts_oom_kills_and_the_replica_timeline(results):
    ingestor = results.deployments["ingestor"]
    assert (ingestor.restarts, ingestor.oom_kills) == (1, 1)  # the kernel's OOM kill (OOMKilled, 137)
    # registry-0's 5 restarts happened before the run; registry-1 crashed in it with exit code 1.
    assert (results.deployments["registry"].restarts, results.deployments["registry"].oom_kills) == (1, 0)
    # A pod first seen in the run counts from 0; its JVM's exit code 3 (ExitOnOutOfMemoryError,
    # reason Error) is an OOM kill as well.
    assert (results.deployments["gateway"].restarts, results.deployments["gateway"].oom_kills) == (1, 1)
    assert [(p.desired, p.ready) for p in ingestor.timeline] == [(1, 1), (0, 0), (1, 0), (1, 1)]
    assert [p.t for p in ingestor.timeline][1] == pytest.approx(30, abs=5)
    assert (ingestor.replicas_min, ingestor.replicas_max) == (0, 1)
    assert results.deployments["gateway"].timeline[0].ready == 2
    # Scaled to 0 is not unready; from 1 desired and 0 ready to 1 ready is.
    times = [p.t for p in ingestor.timeline]
    assert ingestor.unready_seconds == pytest.approx(times[3] - times[2])


def test_the_longest_unready_stretch_counts_to_the_end_when_it_never_ended():
    def timeline(*points):
        return [ReplicaPoint(t=t, desired=d, ready=r) for t, d, r in points]

    # Two kills: back after 8 s, then after 25 s; a gap in the samples keeps the state.
    two_kills = timeline((0, 2, 2), (10, 2, 1), (18, 2, 2), (40, 2, 1), (50, None, None), (65, 2, 2))
    assert longest_unready(two_kills, end=100) == 25
    assert longest_unready(timeline((0, 2, 2), (90, 2, 1)), end=100) == 10  # still down when the run ended
    assert longest_unready(timeline((0, 1, 1), (5, 3, 1), (45, 3, 3)), end=100) == 40  # a scale-up's start
    assert longest_unready(timeline((0, 2, 2)), end=100) == 0
    assert longest_unready(timeline((0, None, 2)), end=100) is None


def test_jvm_heap_gc_and_cpu_per_deployment(results):
    registry = results.deployments["registry"]
    assert registry.heap_max_bytes == 300 * 2**20  # the largest sum of the heap pools, not Metaspace
    assert registry.gc_seconds == pytest.approx(0.05 * 18, rel=0.1)  # a pause every 5 s over the 90 s window
    assert registry.cpu_cores == pytest.approx(0.5)
    assert results.deployments["ingestor"].heap_max_bytes is None  # no series: unknown, not 0


def test_retries_per_endpoint_and_in_total(results):
    assert results.endpoints["getStatus"].retries == 4
    assert results.total.retries == 4
    assert results.endpoints["getData"].timeouts == 0


def test_throughput_stability_is_the_last_minute_over_the_first(known_run_prometheus):
    assert analyze(known_run_prometheus, WINDOW, LEDGER).throughput_stability is None  # a 60 s load
    # Pretend the load ran from 40 s before the history to 80 s into it (two minutes): its first
    # minute holds the pushes up to 20 s (20 getData + 10 getStatus 2xx), its last the other 150.
    longer = RunWindow(TEST_ID, T0 - 40, T0 + 80, DRAIN_END, drain_seconds=20.0)
    assert analyze(known_run_prometheus, longer, LEDGER).throughput_stability == pytest.approx(150 / 30)


def test_the_ledger_compares_k6_with_the_registry(results):
    ledger = results.ledger
    assert ledger.accepted_by_endpoint == {"getData": 120, "getStatus": 60}
    assert (ledger.requests_accepted, ledger.results_done, ledger.results_failed) == (120, 118, 1)
    assert (ledger.lost_requests, ledger.logs_expected, ledger.lost_logs, ledger.duplicates) == (1, 180, 1, 2)
    assert results.throughput == pytest.approx(119 / 85)


def test_ledger_completeness_says_what_is_missing():
    complete, reason = ledger_complete(ledger_result({"getData": 10}, {"results": {"done": 10}, "logs": 10}, ("getData",)))
    assert complete and reason == ""
    complete, reason = ledger_complete(ledger_result({"getData": 10}, {"results": {"done": 7}, "logs": 9}, ("getData",)))
    assert not complete
    assert reason == "ledger incomplete: 3 of 10 results, 1 of 10 activity logs not persisted yet"


def test_registry_mix_expects_logs_only_from_add_app_log():
    ledger = ledger_result({"addAppLog": 50, "getAppLog": 20, "getUser": 5}, {"logs": 50}, ("addAppLog",))
    assert (ledger.logs_expected, ledger.lost_logs, ledger.lost_requests) == (50, 0, 0)


def test_verdict_on_the_analysed_run(results, known_run_prometheus):
    objectives = [Objective.model_validate(o) for o in (
        {"metric": "lost_requests", "op": "==", "value": 0},
        {"metric": "http_req_failed_rate", "op": "<", "value": 0.05},
        {"metric": "http_req_failed_rate", "endpoint": "getStatus", "op": "<", "value": 0.01},
        {"metric": "queue_depth_max", "queue": INGESTOR_QUEUE, "op": "<", "value": 500},
        {"metric": "pod_restarts", "deployment": "ingestor", "op": "==", "value": 0},
        {"metric": "oom_kills", "op": "<=", "value": 1},
        {"metric": "oom_kills", "deployment": "registry", "op": "==", "value": 0},
        {"metric": "drain_seconds", "op": "<", "value": "30s"},
        {"metric": "http_req_duration_p99", "op": "<", "value": "1s"},
        {"promql": 'max_over_time(kube_deployment_spec_replicas{deployment="ingestor"}[100s])', "op": "==", "value": 1},
    )]
    verdict = evaluate(objectives, results, known_run_prometheus, DRAIN_END)
    table = {c.name: (c.observed, c.ok) for c in verdict.checks}
    assert table["lost_requests"] == (1, False)
    assert table["http_req_failed_rate"] == (pytest.approx(3 / 183), True)
    assert table["http_req_failed_rate{getStatus}"] == (pytest.approx(3 / 63), False)
    assert table[f"queue_depth_max{{{INGESTOR_QUEUE}}}"] == (302, True)
    assert table["pod_restarts{ingestor}"] == (1, False)
    # The ingestor's kernel OOM kill and the gateway JVM's exit code 3 (the objective an
    # exit code 3 used to pass wrongly); the registry's exit code 1 is no OOM kill.
    assert table["oom_kills"] == (2, False)
    assert table["oom_kills{registry}"] == (0, True)
    assert table["drain_seconds"] == (25, True)
    # No latency histograms in this history: a check without data fails and says why.
    assert table["http_req_duration_p99"] == (None, False)
    assert [c.detail for c in verdict.checks if c.name == "http_req_duration_p99"] == ["no latency samples"]
    assert table[objectives[-1].promql] == (1, True)
    assert not verdict.passed


def test_another_namespaces_gateway_changes_nothing(results, known_run_prometheus):
    # Another team's system in the same Prometheus: a gateway OOM-killed 3 times during the
    # run, 5 replicas, an ingestor queue 5000 deep, bigger JVMs. Read as that namespace, the
    # same queries see all of it, so the decoy is there to leak...
    decoy = Prometheus(known_run_prometheus.url, system_namespace=RUN.decoy_namespace)
    theirs = analyze(decoy, WINDOW, LEDGER)
    assert (theirs.deployments["gateway"].restarts, theirs.deployments["gateway"].oom_kills) == (3, 3)
    assert theirs.deployments["gateway"].replicas_max == 5 and theirs.queues[INGESTOR_QUEUE].max == 5000
    # ... and our run's figures and verdict hold none of it.
    gateway = results.deployments["gateway"]
    assert (gateway.restarts, gateway.oom_kills, gateway.replicas_max, gateway.heap_max_bytes) == (1, 1, 2, None)
    assert results.deployments["registry"].heap_max_bytes == 300 * 2**20
    assert results.deployments["registry"].cpu_cores == pytest.approx(0.5)
    assert results.queues[INGESTOR_QUEUE].max == 302
    objectives = [Objective.model_validate(o) for o in (
        {"metric": "pod_restarts", "deployment": "gateway", "op": "<=", "value": 1},
        {"metric": "oom_kills", "deployment": "gateway", "op": "<=", "value": 1},
        {"metric": "queue_depth_max", "queue": INGESTOR_QUEUE, "op": "<", "value": 500},
    )]
    assert evaluate(objectives, results, known_run_prometheus, DRAIN_END).passed
    assert not evaluate(objectives, theirs, decoy, DRAIN_END).passed


def test_a_run_without_k6_samples_is_a_harness_error(known_run_prometheus):
    with pytest.raises(AnalysisError, match="no k6 samples for test id local/absent/0"):
        analyze(known_run_prometheus, RunWindow("local/absent/0", LOAD_START, LOAD_END, DRAIN_END), None)


def test_the_ledger_counts_only_what_this_run_added():
    before = {"requests": 60, "results": {"done": 59, "failed": 1}, "logs": 193,
              "logsByEndpoint": {"getData": 60, "getStatus": 60, "getHistory": 55, "getUser": 18}, "duplicates": 2}
    now = {"requests": 120, "results": {"done": 118, "failed": 1}, "logs": 387,
           "logsByEndpoint": {"getData": 120, "getStatus": 120, "getHistory": 110, "getUser": 18, "getImage": 19},
           "duplicates": 2}
    since = ledger_since(now, before)
    assert since["requests"] == 60 and since["results"] == {"done": 59, "failed": 0} and since["logs"] == 194
    assert since["logsByEndpoint"] == {"getData": 60, "getStatus": 60, "getHistory": 55, "getImage": 19}
    assert since["duplicates"] == 0
    assert ledger_since(now, None) is now
