"""k6 (the pinned build) writing to a real Prometheus by remote write, read back by the analysis.

Proves the metric names and labels the engine relies on, that the planned scenarios drop
nothing, and that percentiles merged from k6's native histograms agree with k6's own summary.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from elves.engine.analysis import RunWindow, k6_results
from elves.engine.k6 import runner_env
from elves.engine.models.loadtest import parse_loadtest
from elves.engine.plan import plan_runs
from elves.engine.platform import LoadRun
from elves.engine.prometheus import Prometheus
from engine_testkit import K6_BINARY, free_port, require

SCRIPT = """
import http from 'k6/http';
export const options = { scenarios: JSON.parse(__ENV.ELVES_K6_SCENARIOS) };
export function getData() { http.get(`${__ENV.TARGET}/slow`, { tags: { endpoint: 'getData' } }); }
export function getHistory() { http.get(`${__ENV.TARGET}/missing`, { tags: { endpoint: 'getHistory' } }); }
export function getUser() { http.get(`${__ENV.NOBODY}/`, { tags: { endpoint: 'getUser' } }); }
"""


class Target(BaseHTTPRequestHandler):
    """/slow answers 200 after 10..50 ms (cycling), anything else 404 at once."""

    calls = 0

    def do_GET(self):  # noqa: N802 (http.server's naming)
        if self.path == "/slow":
            Target.calls += 1
            time.sleep(0.01 * (1 + Target.calls % 5))  # the latency under test, not a wait for async work
            self.send_response(200)
        else:
            self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def target():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Target)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def run_k6(prometheus_url: str, target: str, workdir, load: dict):
    """One run of SCRIPT planned from a LoadTest named k6-names with `load`, as every platform
    runs k6 (elves.engine.k6.runner_env), pushing more often: (its plan, k6's summary, start, end).
    NOBODY: a loopback port nothing listens on, so getUser's connections are refused."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "script.js").write_text(SCRIPT)
    test = parse_loadtest({"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest", "metadata": {"name": "k6-names"},
                           "spec": {"load": {"script": {"path": "script.js"}, **load}}})
    (run,) = plan_runs(test, workdir)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(workdir), "TARGET": target, "NOBODY": f"http://127.0.0.1:{free_port()}",
           **runner_env(LoadRun(test_id=run.test_id, script=run.script, scenarios=run.scenarios),
                        prometheus_url, target, target),
           "K6_PROMETHEUS_RW_PUSH_INTERVAL": "1s"}
    start = time.time()
    completed = subprocess.run(
        [str(K6_BINARY), "run", "--quiet", "--no-color", "-o", "experimental-prometheus-rw",
         "--summary-export", str(workdir / "summary.json"), run.script],
        cwd=workdir, env=env, capture_output=True, text=True, timeout=120)
    end = time.time()
    assert completed.returncode == 0, completed.stderr[-2000:]
    return run, json.loads((workdir / "summary.json").read_text()), start, end


@pytest.fixture(scope="module")
def k6_run(prometheus_server, target, tmp_path_factory):
    require("k6", K6_BINARY.exists(), "tools/install-k6.sh")
    run, summary, start, end = run_k6(prometheus_server.url, target, tmp_path_factory.mktemp("k6"),
                                      {"rate": "20/s", "duration": "6s", "mix": {"getData": 3, "getHistory": 1, "getUser": 1}})
    return run, summary, RunWindow(run.test_id, start, end, end)


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


def test_percentiles_from_native_histograms_agree_with_k6(k6_run, prometheus_server):
    run, summary, window = k6_run
    _, total, _ = k6_results(Prometheus(prometheus_server.url), window)
    k6_duration = summary["metrics"]["http_req_duration"]  # milliseconds, exact
    # Native histogram buckets grow by 10 %, so a percentile is known to within a bucket.
    assert total.p95 * 1000 == pytest.approx(k6_duration["p(95)"], rel=0.12)
    assert total.p90 * 1000 == pytest.approx(k6_duration["p(90)"], rel=0.12)
    assert total.mean * 1000 == pytest.approx(k6_duration["avg"], rel=0.02)
    assert total.concurrency == pytest.approx(total.rate * total.mean)


def test_a_rerun_of_a_loadtest_counts_only_its_own_requests(prometheus_server, target, tmp_path):
    # A LoadTest that runs again keeps its test id. The rerun made fewer requests than the run
    # just before it, whose last samples are a moment older than the rerun's start.
    require("k6", K6_BINARY.exists(), "tools/install-k6.sh")
    run_k6(prometheus_server.url, target, tmp_path / "first", {"rate": "20/s", "duration": "3s", "mix": {"getData": 1}})
    run_start = time.time()
    rerun, summary, start, end = run_k6(prometheus_server.url, target, tmp_path / "rerun",
                                        {"rate": "5/s", "duration": "2s", "mix": {"getData": 1}})
    window = RunWindow(rerun.test_id, start, end, end, run_start=run_start)
    endpoints, total, _ = k6_results(Prometheus(prometheus_server.url), window)
    assert total.requests == endpoints["getData"].requests == summary["metrics"]["http_reqs"]["count"]
    assert total.ok == total.requests
