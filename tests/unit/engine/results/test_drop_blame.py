"""Whose were the dropped iterations (elves.engine.results.drop_blame)? A run is Limited only when the
load generator fell short while the system still answered in time. When the system's answers
held every VU, or an objective had broken before the first drop, the drops are the system's and
the run is Failed, not blamed on k6. Real k6 (the pinned build) against loopback servers, and a
backfilled Prometheus for the objective that broke first; a ramp whose objective never held says
so, with the rate it started at."""

from __future__ import annotations

import time

import pytest

from elves.engine.planning.plan import Segment, vu_ceiling
from elves.engine.results.analysis import RunWindow, analyze
from elves.engine.results.drop_blame import first_drop
from elves.engine.results.generator_limit import generator_limits
from elves.engine.results.prometheus import Prometheus
from elves.engine.results.report.html import breakpoint_text
from elves.engine.results.verdict import evaluate, find_breakpoint, phase_of
from engine_testkit import PrometheusServer, backfill
from k6_testkit import EmptyAnswers, loopback_server, run_k6

SCRIPT = """
import http from 'k6/http';
export const options = { scenarios: JSON.parse(__ENV.ELVES_K6_SCENARIOS) };
export function getData() { http.get(`${__ENV.TARGET}/answer`, { tags: { endpoint: 'getData' } }); }
"""
NOTHING_LOST = [{"metric": "lost_requests", "op": "==", "value": 0}]


class Stuck(EmptyAnswers):
    """Every answer takes 3 s: slower than any stall the plan sizes a pool for."""

    def do_GET(self):  # noqa: N802 (http.server's naming)
        time.sleep(3)  # the system's latency under test, not a wait for async work
        self.answer(200)


class Quick(EmptyAnswers):
    """Every answer takes 300 ms: in time, though 20 a second keep 6 VUs busy."""

    def do_GET(self):  # noqa: N802
        time.sleep(0.3)  # the latency under test
        self.answer(200)


def drops_against(handler, load: dict, prometheus_url: str, tmp_path, objectives):
    """Real k6 short of VUs against a loopback system answering with `handler`: the run's results
    as the analysis makes them, the first drop included."""
    with loopback_server(handler) as url:
        runs = run_k6(prometheus_url, url, tmp_path, SCRIPT, {**load, "mix": {"getData": 1}}, name=handler.__name__.lower())
    prom = Prometheus(prometheus_url, system_namespace="elves")
    results = analyze(prom, RunWindow(runs.plan.test_id, runs.start, runs.end, runs.end), None)
    results.vus_ceiling = vu_ceiling(runs.plan.scenarios)
    results.first_drop = first_drop(prom, objectives, runs.plan.test_id, runs.start, runs.end)
    assert results.dropped_iterations > 20
    return results


def test_drops_while_the_system_held_every_vu_are_the_systems_and_the_run_fails(
        prometheus_server, tmp_path, make_loadtest):
    objectives = make_loadtest(slo=NOTHING_LOST).spec.objectives
    results = drops_against(Stuck, {"rate": "10/s", "duration": "8s", "vus": {"preAllocated": 5, "max": 10}},
                            prometheus_server.url, tmp_path, objectives)

    drop = results.first_drop
    assert drop is not None and drop.system_held, drop
    assert drop.latency >= 2.9, drop
    # Neither the drops nor the VU ceiling are the generator's: no Limited...
    assert generator_limits(results) == []
    verdict = evaluate(objectives, results)
    # ... but a Failed run, saying whose the drops were.
    assert phase_of(verdict) == "Failed"
    (check,) = [c for c in verdict.checks if c.name == "dropped_iterations"]
    assert not check.ok and "waited on the system's answers" in check.detail
    assert "the generator did not fall short" in check.detail


def test_drops_while_the_system_answered_in_time_are_the_generators(prometheus_server, tmp_path, make_loadtest):
    objectives = make_loadtest(slo=NOTHING_LOST).spec.objectives
    results = drops_against(Quick, {"rate": "20/s", "duration": "6s", "vus": {"preAllocated": 1, "max": 2}},
                            prometheus_server.url, tmp_path, objectives)

    assert results.first_drop is not None and not results.first_drop.system_held, results.first_drop
    verdict = evaluate(objectives, results)
    assert phase_of(verdict) == "Limited"
    assert verdict.limited_by[0].startswith(f"k6 dropped {results.dropped_iterations:,} iterations")
    assert not [c for c in verdict.checks if c.name == "dropped_iterations"]


# --- an objective broken before the first drop, and a ramp that never held: backfilled ------------

TEST_ID = "local/broken-first/0"


@pytest.fixture(scope="module")
def broken_from_the_start(tmp_path_factory):
    """A 90 s ramp from 80/s whose every request fails from the first second; k6 drops its first
    iteration only 40 s in."""
    t0 = (int(time.time()) - 2 * 3600) // 60 * 60
    k6 = 'k6_http_reqs_total{{testid="{tid}",endpoint="getData",status="{st}",expected_response="{ok}"}}'
    samples = []
    for offset in range(0, 91, 5):
        samples.append((k6.format(tid=TEST_ID, st="503", ok="false"), 80 * offset, t0 + offset))
        samples.append((k6.format(tid=TEST_ID, st="202", ok="true"), 0, t0 + offset))
        samples.append((f'k6_dropped_iterations_total{{testid="{TEST_ID}"}}', 0 if offset < 40 else 7 * offset,
                        t0 + offset))
    workdir = tmp_path_factory.mktemp("broken-first")
    server = PrometheusServer(workdir, data_dir=backfill(workdir, samples))
    yield Prometheus(server.url, system_namespace="elves"), t0
    server.stop()


def test_drops_after_an_objective_broke_are_the_systems(broken_from_the_start, make_loadtest):
    prom, t0 = broken_from_the_start
    objectives = make_loadtest(slo=[{"metric": "http_req_failed_rate", "op": "<", "value": 0.01}]).spec.objectives
    drop = first_drop(prom, objectives, TEST_ID, t0, t0 + 90)
    assert drop is not None and drop.at_seconds == 40
    assert drop.broken_before == "http_req_failed_rate" and drop.system_held


def test_a_breakpoint_whose_objective_never_held_says_so_with_the_rate_it_started_at(broken_from_the_start,
                                                                                    make_loadtest):
    prom, t0 = broken_from_the_start
    objectives = make_loadtest(slo=[{"metric": "http_req_failed_rate", "op": "<", "value": 0.01}]).spec.objectives
    ramp = [Segment(start=0, end=90, start_rate=80, end_rate=800)]
    breakpoint = find_breakpoint(objectives, prom, TEST_ID, t0, t0 + 90, ramp)
    assert breakpoint is not None and breakpoint.never_held
    assert breakpoint.at_seconds >= 0 and breakpoint.rate == pytest.approx(80, abs=45)
    text = breakpoint_text(breakpoint)
    assert text.startswith("http_req_failed_rate never held") and "-0" not in text
