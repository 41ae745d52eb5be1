"""The percentiles a report and the gate give (p50, p90, p95, p99 of http_req_duration) are k6's.

The engine reads them from the native histograms k6 pushes to Prometheus, merged over every
runner (elves.engine.results.analysis.k6_results: the same PromQL and merge the verdict uses). A
histogram knows a latency only to within its bucket, so that is the promise checked: against
k6's own end-of-test summary for one runner, and for two runners of one run against the
exact percentiles of the union of both runners' samples (k6's JSON output), since no runner's
summary knows the other's.

The bucket: k6 (v1.8.1, internal/output/prometheusrw/remotewrite/trend.go) makes its
histograms with Prometheus' Go client and NativeHistogramBucketFactor 1.1, which the client
turns into the largest schema whose growth factor is at most 1.1: schema 3, where bucket i
holds (2^((i-1)/8), 2^(i/8)] seconds, each about 9 % wider than the one below. The test
reads the bounds back from Prometheus and fails if the schema ever changes.

The target answers after a random delay, log-uniform over a range, so that every bucket of the
range holds about the same number of samples and no percentile falls into an empty stretch.
"""

from __future__ import annotations

import json
import math
import random
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from k6_testkit import EmptyAnswers, loopback_server, run_k6

from elves.engine.results import promql
from elves.engine.results.analysis import RunWindow, k6_results
from elves.engine.results.prometheus import Prometheus

SCHEMA = 3  # k6's native histograms (see above)
QUANTILES = {"p50": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99}
SCRIPT = """
import http from 'k6/http';
export const options = {
  scenarios: JSON.parse(__ENV.ELVES_K6_SCENARIOS),
  summaryTrendStats: ['p(50)', 'p(90)', 'p(95)', 'p(99)', 'count'],
};
export function getData() {
  http.get(`${__ENV.TARGET}/delay?from=${__ENV.FROM_MS}&to=${__ENV.TO_MS}`,
           { tags: { endpoint: 'getData', name: 'delay' } });
}
"""
# 500 requests over a range of 4.3 octaves (35 buckets): about 14 a bucket.
LOAD = {"rate": "100/s", "duration": "5s", "mix": {"getData": 1}}


class Delayed(EmptyAnswers):
    """/delay?from=A&to=B answers 200 after a delay drawn log-uniformly from A..B milliseconds."""

    def do_GET(self):  # noqa: N802 (http.server's naming)
        query = parse_qs(urlsplit(self.path).query)
        low, high = float(query["from"][0]), float(query["to"][0])
        # The latency under test, not a wait for something asynchronous.
        time.sleep(math.exp(random.uniform(math.log(low), math.log(high))) / 1000)
        self.answer(200)


@pytest.fixture(scope="module")
def target():
    with loopback_server(Delayed) as url:
        yield url


def bucket(seconds: float) -> int:
    """The index i of the schema-3 bucket (2^((i-1)/8), 2^(i/8)] holding `seconds`."""
    return math.ceil(math.log2(seconds) * 2**SCHEMA)


def k6_percentile(sorted_ms: list[float], q: float) -> float:
    """A percentile as k6 computes its summary's (metrics.TrendSink.P): linear between the
    two samples around rank q * (n - 1)."""
    rank = q * (len(sorted_ms) - 1)
    below, above = sorted_ms[math.floor(rank)], sorted_ms[math.ceil(rank)]
    return below + (above - below) * (rank - math.floor(rank))


def durations_ms(samples_file: Path) -> list[float]:
    """Every http_req_duration sample (milliseconds) of one runner's k6 JSON output."""
    found = []
    for line in samples_file.read_text().splitlines():
        point = json.loads(line)
        if point["type"] == "Point" and point["metric"] == "http_req_duration":
            found.append(point["data"]["value"])
    return found


def engine_percentiles(prometheus_url: str, runs) -> tuple[dict[str, float], int]:
    """What a report of this run says: (percentiles in seconds, requests), and checks that the
    histograms Prometheus holds are schema 3's."""
    window = RunWindow(runs.plan.test_id, runs.start, runs.end, runs.end)
    prometheus = Prometheus(prometheus_url)
    _, total, _ = k6_results(prometheus, window)
    span, at = window.k6_range()
    growth = {float(upper) / float(lower)
              for series in prometheus.query_matrix(promql.k6_duration_histograms(runs.plan.test_id, span), at)
              for _, histogram in series.histograms for _, lower, upper, _ in histogram["buckets"]
              if float(lower) > 0}
    assert growth and all(g == pytest.approx(2 ** (1 / 2**SCHEMA), rel=1e-9) for g in growth), \
        f"buckets grow by {sorted(growth)}, not by schema {SCHEMA}'s 2^(1/8)"
    return {name: getattr(total, name) for name in QUANTILES}, total.requests


def assert_within_one_bucket(engine_s: dict[str, float], k6_ms: dict[str, float]) -> None:
    apart = {name: bucket(engine_s[name]) - bucket(k6_ms[name] / 1000) for name in QUANTILES}
    assert all(abs(d) <= 1 for d in apart.values()), \
        f"buckets apart: {apart}; engine (ms) {({n: engine_s[n] * 1000 for n in QUANTILES})}, k6 (ms) {k6_ms}"


def test_one_runners_percentiles_agree_with_k6s_summary(prometheus_server, target, tmp_path):
    runs = run_k6(prometheus_server.url, target, tmp_path, SCRIPT, LOAD, name="percentiles-one",
                  runner_env_extra=[{"FROM_MS": "5", "TO_MS": "100"}], samples=True)
    trend = runs.summary["metrics"]["http_req_duration"]  # milliseconds
    engine, requests = engine_percentiles(prometheus_server.url, runs)
    assert requests == trend["count"] >= 400
    assert_within_one_bucket(engine, {name: trend[f"p({round(q * 100)})"] for name, q in QUANTILES.items()})
    # The samples file holds what the summary was computed from: the union below is k6's own figure.
    samples = sorted(durations_ms(runs.samples[0]))
    assert [k6_percentile(samples, q) for q in QUANTILES.values()] == \
        pytest.approx([trend[f"p({round(q * 100)})"] for q in QUANTILES.values()], rel=1e-9)


def test_two_runners_merge_into_the_percentiles_of_all_their_samples(prometheus_server, target, tmp_path):
    # Two runners of one run (one test id, execution segments) see different latencies: the
    # first 5-50 ms, the second 15-150 ms, so the run's percentiles are neither runner's.
    runs = run_k6(prometheus_server.url, target, tmp_path, SCRIPT, {**LOAD, "parallelism": 2},
                  name="percentiles-two", runner_env_extra=[{"FROM_MS": "5", "TO_MS": "50"},
                                                            {"FROM_MS": "15", "TO_MS": "150"}], samples=True)
    per_runner = [sorted(durations_ms(path)) for path in runs.samples]
    union = sorted(per_runner[0] + per_runner[1])
    exact = {name: k6_percentile(union, q) for name, q in QUANTILES.items()}
    own_medians = [runs.summaries[r]["metrics"]["http_req_duration"]["p(50)"] for r in (0, 1)]
    # Not a test of one runner's figure: the run's median is buckets away from each runner's.
    assert all(abs(bucket(exact["p50"] / 1000) - bucket(median / 1000)) > 2 for median in own_medians), \
        (exact["p50"], own_medians)
    engine, requests = engine_percentiles(prometheus_server.url, runs)
    assert requests == len(union) == sum(s["metrics"]["http_req_duration"]["count"] for s in runs.summaries)
    assert min(len(samples) for samples in per_runner) >= 200
    assert_within_one_bucket(engine, exact)
