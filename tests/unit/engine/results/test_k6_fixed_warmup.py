"""A fixed warm-up (`spec.load.warmup: <duration>`) is the first seconds of the load's own k6
run, whose counters and latency histograms are cumulative: what the tables and the verdict read
must be the run less the reading at the warm-up's end, not the whole run (until 2026-11-27 the
warm-up's requests, failures and latencies stayed in them). Real k6 writing to a real Prometheus."""

from __future__ import annotations

import time
from datetime import datetime, timezone

import pytest

from elves.engine.models.status import RunResults, Window
from elves.engine.results.analysis import RunWindow, leave_out_warmup
from elves.engine.results.prometheus import Prometheus
from k6_testkit import EmptyAnswers, loopback_server, run_k6

SCRIPT = """
import http from 'k6/http';
export const options = { scenarios: JSON.parse(__ENV.ELVES_K6_SCENARIOS) };
export function getData() { http.get(`${__ENV.TARGET}/`, { tags: { endpoint: 'getData' } }); }
"""
# The target fails every request for this long after its first one: well inside the warm-up
# and before k6's first push (every 5 s), so the reading at the warm-up's end holds them all.
FAILING_SECONDS = 3.0


class ColdTarget(EmptyAnswers):
    """503 for the first FAILING_SECONDS after the first request (a cold service), then 200."""

    first: float | None = None

    def do_GET(self):  # noqa: N802 (http.server's naming)
        now = time.monotonic()
        ColdTarget.first = ColdTarget.first or now
        self.answer(503 if now - ColdTarget.first < FAILING_SECONDS else 200)


@pytest.fixture
def cold_target():
    ColdTarget.first = None
    with loopback_server(ColdTarget) as url:
        yield url


def test_the_warmups_failures_and_requests_are_left_out_of_the_loads_figures(prometheus_server, cold_target, tmp_path):
    runs = run_k6(prometheus_server.url, cold_target, tmp_path,
                  SCRIPT, {"rate": "100/s", "duration": "20s", "profile": "spike", "warmup": "10s",
                           "mix": {"getData": 1}}, name="fixed-warmup")
    assert runs.plan.warmup_seconds == 10
    window = RunWindow(runs.plan.test_id, runs.start, runs.end, runs.end)
    results = RunResults(window=Window(start=datetime.fromtimestamp(runs.start, timezone.utc),
                                       end=datetime.fromtimestamp(runs.end, timezone.utc)),
                         load_seconds=runs.end - runs.start)

    leave_out_warmup(results, Prometheus(prometheus_server.url), window, runs.plan.warmup_seconds)

    k6_requests = int(runs.summary["metrics"]["http_reqs"]["count"])
    assert results.warmup is not None and results.warmup.failed > 0, results.warmup
    # Every failure came in the warm-up: the load after it failed nothing ...
    assert results.total.failed == 0 and results.error_rate == 0, results.total
    # ... and the two parts together are k6's whole run, each request counted once.
    assert results.warmup.requests + results.total.requests == k6_requests
    assert results.warmup.requests < results.total.requests
