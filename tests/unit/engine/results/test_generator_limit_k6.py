"""k6 itself (the pinned build) short of VUs, writing to a real Prometheus: the dropped
iterations and the most active VUs the analysis reads back meet the plan's VU ceiling, and the
verdict's rule names both causes; a pool that cannot grow shows only as dropped iterations;
with the pool the plan sizes, the same load names none."""

from __future__ import annotations

import time

import pytest

from elves.engine.planning.plan import vu_ceiling
from elves.engine.results.analysis import RunWindow, analyze
from elves.engine.results.generator_limit import generator_limits
from elves.engine.results.prometheus import Prometheus
from k6_testkit import EmptyAnswers, loopback_server, run_k6

# Real k6 judged on its VUs and CPU: alone, after the parallel tests (make test-unit).
pytestmark = pytest.mark.serial

SCRIPT = """
import http from 'k6/http';
export const options = { scenarios: JSON.parse(__ENV.ELVES_K6_SCENARIOS) };
export function getData() { http.get(`${__ENV.TARGET}/slow`, { tags: { endpoint: 'getData' } }); }
"""
LOAD = {"rate": "20/s", "duration": "4s", "mix": {"getData": 1}}


class Slow(EmptyAnswers):
    """Every answer takes 300 ms: 20 iterations a second keep 6 VUs busy."""

    def do_GET(self):  # noqa: N802 (http.server's naming)
        time.sleep(0.3)  # the latency under test, not a wait for async work
        self.answer(200)


@pytest.fixture(scope="module")
def slow():
    with loopback_server(Slow) as url:
        yield url


def figures(prometheus_url: str, runs):
    results = analyze(Prometheus(prometheus_url, system_namespace="elves"),
                      RunWindow(runs.plan.test_id, runs.start, runs.end, runs.end), None)
    results.vus_ceiling = vu_ceiling(runs.plan.scenarios)
    return results


@pytest.mark.parametrize("vus, ceiling", [({"preAllocated": 1, "max": 2}, 2), ({"preAllocated": 2}, None)],
                         ids=["a pool of 1 that may grow to 2", "a pool of 2 that cannot grow"])
def test_k6_with_two_vus_for_six_drops_iterations_at_its_vu_ceiling(prometheus_server, slow, tmp_path, vus, ceiling):
    runs = run_k6(prometheus_server.url, slow, tmp_path, SCRIPT, {**LOAD, "vus": vus}, name="two-vus")
    results = figures(prometheus_server.url, runs)
    # k6's end-of-test summary can miss the one iteration dropped as the scenario stops, which its
    # remote write still delivers (seen in CI: 56 in the summary, 57 in Prometheus): within one.
    counted = runs.summary["metrics"]["dropped_iterations"]["count"]
    assert (results.vus_ceiling, results.vus_max) == (ceiling, 2)
    assert abs(results.dropped_iterations - counted) <= 1, (results.dropped_iterations, counted)
    assert results.dropped_iterations > 20  # about two-thirds of 80
    reasons = [why.split(":")[0] for why in generator_limits(results)]
    assert reasons[0] == f"k6 dropped {results.dropped_iterations:,} iterations"
    assert reasons[1:] == (["k6 brought up all 2 VUs the plan allows, adding each only when none was free"
                            " (raise spec.load.vus.max)"] if ceiling else [])


def test_k6_with_the_pool_the_plan_sizes_is_within_every_limit(prometheus_server, slow, tmp_path):
    runs = run_k6(prometheus_server.url, slow, tmp_path, SCRIPT, LOAD, name="planned-vus")
    results = figures(prometheus_server.url, runs)
    assert results.dropped_iterations == 0 and results.vus_max < results.vus_ceiling
    assert generator_limits(results) == []
