"""k6 (the pinned build) writing to a real Prometheus by remote write, read back by the analysis.

Proves the metric names and labels the engine relies on, that the planned scenarios drop
nothing, and that the mean latency from k6's native histograms agrees with k6's own summary
(the percentiles: test_k6_percentiles.py).
"""

from __future__ import annotations

import time

import pytest

from elves.engine.results.analysis import RunWindow, k6_results
from elves.engine.results.prometheus import Prometheus
from engine_testkit import free_port
from k6_testkit import EmptyAnswers, K6Runs, loopback_server, run_k6

SCRIPT = """
import http from 'k6/http';
export const options = { scenarios: JSON.parse(__ENV.ELVES_K6_SCENARIOS) };
export function getData() { http.get(`${__ENV.TARGET}/slow`, { tags: { endpoint: 'getData' } }); }
export function getHistory() { http.get(`${__ENV.TARGET}/missing`, { tags: { endpoint: 'getHistory' } }); }
export function getUser() { http.get(`${__ENV.NOBODY}/`, { tags: { endpoint: 'getUser' } }); }
"""


class Target(EmptyAnswers):
    """/slow answers 200 after 10..50 ms (cycling), anything else 404 at once."""

    calls = 0

    def do_GET(self):  # noqa: N802 (http.server's naming)
        if self.path == "/slow":
            Target.calls += 1
            time.sleep(0.01 * (1 + Target.calls % 5))  # the latency under test, not a wait for async work
            self.answer(200)
        else:
            self.answer(404)


@pytest.fixture(scope="module")
def target():
    with loopback_server(Target) as url:
        yield url


def run_script(prometheus_url: str, target: str, workdir, load: dict) -> K6Runs:
    """One run of SCRIPT planned from a LoadTest named k6-names with `load`. NOBODY: a loopback
    port nothing listens on, so getUser's connections are refused."""
    return run_k6(prometheus_url, target, workdir, SCRIPT, load,
                  runner_env_extra=[{"NOBODY": f"http://127.0.0.1:{free_port()}"}])


@pytest.fixture(scope="module")
def k6_run(prometheus_server, target, tmp_path_factory):
    runs = run_script(prometheus_server.url, target, tmp_path_factory.mktemp("k6"),
                      {"rate": "20/s", "duration": "6s", "mix": {"getData": 3, "getHistory": 1, "getUser": 1}})
    return runs.plan, runs.summary, RunWindow(runs.plan.test_id, runs.start, runs.end, runs.end)


def test_counts_match_k6_and_nothing_is_dropped(k6_run, prometheus_server):
    run, summary, window = k6_run
    endpoints, total, dropped = k6_results(Prometheus(prometheus_server.url), window)
    assert total.requests == summary["metrics"]["http_reqs"]["count"]
    assert sum(e.requests for e in endpoints.values()) == total.requests
    assert endpoints["getData"].requests == pytest.approx(0.6 * 20 * 6, rel=0.1)
    assert [endpoints[e].error_rate for e in ("getData", "getHistory", "getUser")] == [0, 1, 1]
    assert dropped == 0 and "dropped_iterations" not in summary["metrics"]


def test_failed_requests_are_counted_by_why_they_failed(k6_run, prometheus_server):
    run, summary, window = k6_run
    endpoints, total, _ = k6_results(Prometheus(prometheus_server.url), window)
    history, user = endpoints["getHistory"].requests, endpoints["getUser"].requests
    assert endpoints["getData"].failures == {}
    assert endpoints["getHistory"].failures == {"HTTP 404": history}
    assert endpoints["getUser"].failures == {"k6 1212 (connection refused)": user}
    assert total.failures == {"HTTP 404": history, "k6 1212 (connection refused)": user}


def test_mean_latency_from_native_histograms_agrees_with_k6(k6_run, prometheus_server):
    run, summary, window = k6_run
    _, total, _ = k6_results(Prometheus(prometheus_server.url), window)
    k6_duration = summary["metrics"]["http_req_duration"]  # milliseconds, exact
    assert total.mean * 1000 == pytest.approx(k6_duration["avg"], rel=0.02)
    assert total.concurrency == pytest.approx(total.rate * total.mean)


def test_a_rerun_of_a_loadtest_counts_only_its_own_requests(prometheus_server, target, tmp_path):
    # A LoadTest that runs again keeps its test id. The rerun made fewer requests than the run
    # just before it, whose last samples are a moment older than the rerun's start.
    run_script(prometheus_server.url, target, tmp_path / "first", {"rate": "20/s", "duration": "3s", "mix": {"getData": 1}})
    run_start = time.time()
    rerun = run_script(prometheus_server.url, target, tmp_path / "rerun",
                       {"rate": "5/s", "duration": "2s", "mix": {"getData": 1}})
    window = RunWindow(rerun.plan.test_id, rerun.start, rerun.end, rerun.end, run_start=run_start)
    endpoints, total, _ = k6_results(Prometheus(prometheus_server.url), window)
    assert total.requests == endpoints["getData"].requests == rerun.summary["metrics"]["http_reqs"]["count"]
    assert total.ok == total.requests
