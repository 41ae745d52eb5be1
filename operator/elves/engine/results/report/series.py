"""The time series a report plots, read from Prometheus once and saved beside the summary.

One entry per run, times in seconds since that run's load started, so `elves report`
can re-render without Prometheus (whose retention may be gone by then).
"""

from __future__ import annotations

from typing import Any

from elves.engine.models.status import LoadTestStatus
from elves.engine.results import promql
from elves.engine.results.prometheus import Prometheus, PrometheusError

POINTS_PER_PLOT = 500
BEFORE_LOAD_SECONDS = 10.0
AFTER_END_SECONDS = 5.0
LATENCY_QUANTILES = (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))


def _plot(prom: Prometheus, expr: str, label: str, start: float, end: float, step: float, origin: float,
          label_of=None) -> list[dict[str, Any]]:
    lines = []
    for series in prom.query_range(expr, start, end, step):
        name = label_of(series.labels) if label_of else series.labels.get(label, label)
        lines.append({"label": name, "points": [[round(t - origin, 3), v] for t, v in series.points]})
    return sorted(lines, key=lambda line: line["label"])


def run_series(prom: Prometheus, test_id: str, load_start: float, end: float) -> dict[str, list[dict[str, Any]]]:
    """Every plotted series of one run (raises PrometheusError)."""
    start, stop = load_start - BEFORE_LOAD_SECONDS, end + AFTER_END_SECONDS
    step = max(1.0, (stop - start) / POINTS_PER_PLOT)

    def plot(expr: str, label: str, label_of=None) -> list[dict[str, Any]]:
        return _plot(prom, expr, label, start, stop, step, load_start, label_of)

    latency = []
    for name, quantile in LATENCY_QUANTILES:
        latency += plot(promql.k6_latency_quantile(quantile, test_id), name, lambda _labels, n=name: n)
    namespace = prom.system_namespace
    replicas = (plot(promql.replicas_ready(namespace=namespace), "deployment",
                     lambda labels: f"{labels.get('deployment')} ready")
                + plot(promql.replicas_desired(namespace=namespace), "deployment",
                       lambda labels: f"{labels.get('deployment')} desired"))
    restarts = plot(promql.restarts_total(namespace=namespace), "container")
    for line in restarts:  # count from the start of the window: restarts during this run
        first = next((v for _, v in line["points"] if v is not None), 0.0)
        line["points"] = [[t, None if v is None else v - first] for t, v in line["points"]]
    return {
        "queue_depth": plot(promql.queue_depth(namespace=namespace), "queue"),
        "request_rate": plot(promql.k6_request_rate(test_id), "endpoint"),
        "error_rate": plot(promql.k6_error_rate(test_id), "errors", lambda _labels: "failed share"),
        "latency": latency,
        "replicas": sorted(replicas, key=lambda line: line["label"]),
        "restarts": restarts,
    }


def collect(prom: Prometheus, status: LoadTestStatus, now: float) -> tuple[dict[str, Any], str]:
    """Series of every run that got as far as starting its load; and a note when Prometheus failed."""
    runs = []
    for run in status.runs:
        if run.load_started_at is None:
            continue
        load_start = run.load_started_at.timestamp()
        end = (run.finished_at or run.drained_at or run.load_ended_at)
        end_epoch = end.timestamp() if end else now
        try:
            series = run_series(prom, run.test_id, load_start, end_epoch)
        except PrometheusError as exc:
            return {"runs": runs}, f"plots incomplete: {exc}"
        runs.append({"index": run.index, "testId": run.test_id, "series": series})
    return {"runs": runs}, ""
