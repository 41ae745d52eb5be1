"""Autoscaling's figures: replica-seconds, replica changes, scale-up lag and
scale-down time, from series alone and read back from a real Prometheus; as objectives, in
the sweep table and in what `elves run` prints."""

from __future__ import annotations

import pytest

from elves.engine.results.analysis import RunWindow, deployment_results
from elves.engine.results.autoscaling_figures import (HPA, KEDA, first_added_ready, first_sustained_rise,
                                                      replica_changes, replica_seconds, scale_down_seconds,
                                                      scaling_figures)
from elves.engine.models.autoscaling import Autoscaling
from elves.engine.models.objectives import Objective
from elves.engine.models.status import DeploymentResult, LoadTestStatus, RunStatus, ScalingFigures
from elves.engine.results.console import closing_tables
from elves.engine.results.prometheus import Prometheus
from elves.engine.results.verdict import evaluate, sweep_table
from engine_testkit import PrometheusServer, backfill
from test_verdict import results as run_results

QUEUE = "elves.ingestor.data.in"
LOAD_END, END = 120.0, 180.0  # seconds since the load's start: the load, then a minute of drain


def desired_at(t: float) -> int:
    """KEDA's 1 -> 2 -> 3 -> 2 -> 1: up at 25 s and 35 s, down at 100 s and 130 s."""
    return 1 if t < 25 else 2 if t < 35 else 3 if t < 100 else 2 if t < 130 else 1


def ready_at(t: float) -> int:
    """The replicas Ready 15 s after they were asked for, gone 10 s after they were not."""
    return 1 if t < 40 else 2 if t < 50 else 3 if t < 110 else 2 if t < 140 else 1


def queue_ready_at(t: float) -> int:
    """50 messages ready from 20 s to 80 s: past KEDA's trigger of 20 per replica."""
    return 50 if 20 <= t < 80 else 0


TIMES = [float(t) for t in range(0, 181, 5)]
DESIRED = [(t, desired_at(t)) for t in TIMES]
READY = [(t, ready_at(t)) for t in TIMES]
DEPTH = [(t, queue_ready_at(t)) for t in TIMES]
# 1 x 40 s + 2 x 10 s + 3 x 60 s + 2 x 30 s + 1 x 40 s
STEPPED_REPLICA_SECONDS = 340.0


def test_a_stepped_scale_up_and_down_gives_its_cost_changes_and_lags():
    figures = scaling_figures(DESIRED, READY, LOAD_END, END, autoscaler=KEDA, minimum=1, queue=QUEUE, depth=DEPTH,
                              messages_per_replica=20)
    assert figures.replica_seconds == STEPPED_REPLICA_SECONDS
    assert figures.replica_changes == 4
    assert figures.trigger == f"{QUEUE} above 20 ready messages"
    assert figures.triggered_at == 20.0
    assert figures.scale_up_lag_seconds == 20.0  # the queue past 20 at 20 s, the second replica Ready at 40 s
    assert figures.scale_down_seconds == 10.0  # the load ends at 120 s with 2 asked for, 1 again at 130 s


def test_a_flat_series_did_not_scale():
    flat = [(t, 2) for t in TIMES]
    figures = scaling_figures(flat, flat, LOAD_END, END, autoscaler=HPA, minimum=1)
    assert (figures.scale_up_lag_seconds, figures.scale_down_seconds) == (None, None)
    assert figures.replica_changes == 0
    assert figures.replica_seconds == 2 * END
    assert (figures.trigger, figures.triggered_at) == ("the load's start", 0.0)


def test_the_hpa_lag_runs_from_the_load_start():
    figures = scaling_figures(DESIRED, READY, LOAD_END, END, autoscaler=HPA, minimum=1)
    assert figures.scale_up_lag_seconds == 40.0


def test_a_burst_shorter_than_the_sustain_is_no_trigger():
    burst = [(0, 0), (5, 100), (10, 0), (30, 25), (35, 30), (40, 40), (45, 22), (50, 0)]
    assert first_sustained_rise(burst, 20) == 30
    assert first_sustained_rise(burst, 20, sustain=30) is None
    assert first_sustained_rise([(0, 0), (5, 0)], 20) is None
    assert first_sustained_rise([(0, 0), (5, 30)], 20) == 5  # still rising when the samples end


def test_a_replica_that_crashed_and_came_back_is_not_an_added_one():
    crashed = [(0, 1), (10, 0), (20, 1), (30, 2)]
    assert first_added_ready(crashed, 5) == 30
    assert first_added_ready([(0, 1), (10, 0), (20, 1)], 5) is None


def test_scale_down_already_done_or_not_within_the_drain():
    assert scale_down_seconds([(0, 1), (30, 3), (90, 1)], 120, 1) == 0.0  # back before the load ended
    assert scale_down_seconds([(0, 1), (30, 3)], 120, 1) is None  # still at 3 when the drain ended
    assert scale_down_seconds([(0, 1), (30, 3), (150, 1)], 120, 1) == 30.0


def test_gaps_in_the_samples_hold_the_last_value():
    assert replica_seconds([(0, 1), (10, None), (20, 3)], 30) == 1 * 20 + 3 * 10
    assert replica_seconds([], 30) is None
    assert replica_changes([(0, 1), (5, None), (10, 1), (15, 2)]) == 1


# --- read back from a real Prometheus ---------------------------------------------------

@pytest.fixture(scope="module")
def scaled_run(tmp_path_factory):
    """The stepped KEDA run backfilled as kube-state-metrics and RabbitMQ would have it, with
    the registry under an HPA that never scaled and a gateway nobody touched."""
    import time

    workdir = tmp_path_factory.mktemp("autoscaling-prometheus")
    load_start = float((int(time.time()) - 3 * 3600) // 60 * 60)
    samples = []
    for offset in range(-30, 201, 5):
        t, at = float(max(offset, 0)), load_start + offset
        samples += [
            ('kube_deployment_spec_replicas{namespace="elves",deployment="elves-ingestor"}', desired_at(t), at),
            ('kube_deployment_status_replicas_ready{namespace="elves",deployment="elves-ingestor"}', ready_at(t), at),
            (f'rabbitmq_detailed_queue_messages_ready{{namespace="elves",vhost="/",queue="{QUEUE}"}}',
             queue_ready_at(t), at),
            (f'rabbitmq_detailed_queue_messages_unacked{{namespace="elves",vhost="/",queue="{QUEUE}"}}', 500, at),
            # Another team's ingestor queue, far past the trigger from the start, must not be read.
            (f'rabbitmq_detailed_queue_messages_ready{{namespace="other",vhost="/",queue="{QUEUE}"}}', 5000, at),
        ]
        for name in ("registry", "gateway"):
            samples += [(f'kube_deployment_spec_replicas{{namespace="elves",deployment="{name}"}}', 1, at),
                        (f'kube_deployment_status_replicas_ready{{namespace="elves",deployment="{name}"}}', 1, at)]
    server = PrometheusServer(workdir, data_dir=backfill(workdir, samples))
    window = RunWindow("cluster/autoscaling/0", load_start, load_start + LOAD_END, load_start + END)
    autoscaling = Autoscaling.model_validate({
        "ingestor": {"minReplicas": 1, "maxReplicas": 3, "messagesPerReplica": 20},
        "registry": {"minReplicas": 1, "maxReplicas": 3}})
    yield deployment_results(Prometheus(server.url, system_namespace="elves"), window, autoscaling)
    server.stop()


def test_prometheus_samples_give_keda_s_lag_cost_and_changes(scaled_run):
    figures = scaled_run["ingestor"].scaling
    assert figures is not None and figures.autoscaler == KEDA
    assert figures.replica_seconds == pytest.approx(STEPPED_REPLICA_SECONDS)
    assert figures.replica_changes == 4
    assert figures.scale_up_lag_seconds == pytest.approx(20.0)  # ready messages, not the 500 unacked
    assert figures.scale_down_seconds == pytest.approx(10.0)


def test_an_hpa_that_never_scaled_did_not_and_an_untouched_deployment_has_no_figures(scaled_run):
    registry = scaled_run["registry"].scaling
    assert registry is not None and registry.autoscaler == HPA
    assert (registry.scale_up_lag_seconds, registry.replica_changes) == (None, 0)
    assert registry.replica_seconds == pytest.approx(END)
    assert scaled_run["gateway"].scaling is None


# --- as objectives, in the sweep table and in `elves run` --------------------------------

def keda(**fields) -> ScalingFigures:
    base = dict(autoscaler=KEDA, replica_seconds=340.0, replica_changes=4, minimum=1, trigger="queue",
                triggered_at=20.0, scale_up_lag_seconds=20.0, scale_down_seconds=10.0)
    return ScalingFigures(**{**base, **fields})


def scaled_results(ingestor: ScalingFigures | None, registry: ScalingFigures | None = None):
    return run_results(deployments={"ingestor": DeploymentResult(scaling=ingestor),
                                    "registry": DeploymentResult(scaling=registry), "gateway": DeploymentResult()})


def check(results, **objective):
    return evaluate([Objective.model_validate(objective)], results, drops_judged=True).checks[0]


def test_scaling_objectives_judge_one_deployment_or_the_slowest():
    results = scaled_results(keda(), keda(autoscaler=HPA, scale_up_lag_seconds=50.0, replica_seconds=100.0))
    lag = check(results, metric="scale_up_lag_seconds", deployment="ingestor", op="<", value="30s")
    assert (lag.name, lag.observed, lag.ok) == ("scale_up_lag_seconds{ingestor}", 20.0, True)
    assert check(results, metric="scale_up_lag_seconds", op="<", value="30s").observed == 50.0
    assert check(results, metric="replica_seconds", op="<", value=500).observed == 440.0
    assert check(results, metric="replica_changes", deployment="ingestor", op="<=", value=4).ok


def test_a_scaling_objective_on_a_deployment_that_did_not_scale_is_missed_saying_so():
    flat = check(scaled_results(keda(scale_up_lag_seconds=None, scale_down_seconds=None)),
                 metric="scale_up_lag_seconds", deployment="ingestor", op="<", value="1m")
    assert (flat.observed, flat.ok, flat.detail) == (None, False, "did not scale up")
    untouched = check(scaled_results(None), metric="replica_seconds", deployment="gateway", op=">", value=0)
    assert not untouched.ok
    assert untouched.detail == "the gateway was not autoscaled and its replicas did not change"


def test_a_duration_needs_a_time_metric_and_the_deployment_selector_takes_the_scaling_metrics():
    Objective.model_validate({"metric": "scale_down_seconds", "deployment": "ingestor", "op": "<", "value": "3m"})
    with pytest.raises(ValueError, match="replica_seconds is not a time"):
        Objective.model_validate({"metric": "replica_seconds", "op": "<", "value": "3m"})


def test_the_sweep_table_and_elves_run_show_the_cost_and_the_lag():
    fixed = RunStatus(index=0, test_id="t/0", point={"system.autoscaling.ingestor.mode": "fixed"}, phase="Succeeded",
                      results=scaled_results(keda(autoscaler="", replica_seconds=180.0, replica_changes=0,
                                                  scale_up_lag_seconds=None, scale_down_seconds=None)))
    scaled = RunStatus(index=1, test_id="t/1", point={"system.autoscaling.ingestor.mode": "keda"}, phase="Succeeded",
                       results=scaled_results(keda()))
    rows = sweep_table([fixed, scaled])
    assert [(r.replica_seconds, r.scale_up_lag_seconds) for r in rows] == [(180.0, None), (340.0, 20.0)]
    status = LoadTestStatus(phase="Succeeded", runs=[fixed, scaled], sweep=rows)
    text = "\n".join(closing_tables(status, "5m"))
    assert "did not scale" in text
    assert "replica-s" in text
    scaling_lines = [line for line in text.splitlines() if line.startswith("ingestor") and "keda" in line]
    assert scaling_lines and "20.00s" in scaling_lines[0] and "340" in scaling_lines[0]


def test_the_report_marks_the_lag_on_the_replica_timeline_and_tables_the_figures():
    from datetime import datetime, timezone

    from elves.engine.results.report.html import page

    started = datetime(2026, 1, 1, tzinfo=timezone.utc)
    fixed = RunStatus(index=0, test_id="t/0", point={"system.autoscaling.ingestor.mode": "fixed"}, phase="Succeeded",
                      results=scaled_results(keda(autoscaler="", replica_changes=0, triggered_at=None, trigger="",
                                                  scale_up_lag_seconds=None, scale_down_seconds=None)))
    scaled = RunStatus(index=1, test_id="t/1", point={"system.autoscaling.ingestor.mode": "keda"}, phase="Succeeded",
                       load_started_at=started, results=scaled_results(keda()))
    replicas = [{"label": "ingestor desired", "points": [[t, v] for t, v in DESIRED]},
                {"label": "ingestor ready", "points": [[t, v] for t, v in READY]}]
    status = LoadTestStatus(phase="Succeeded", runs=[fixed, scaled], sweep=sweep_table([fixed, scaled]))
    html = page({"metadata": {"name": "autoscaling"}}, status,
                {"runs": [{"index": 1, "series": {"replicas": replicas}}]})
    run_1 = html.split("Run 1 (")[1]
    replica_chart = run_1.split("<h3>Replicas per deployment")[1].split("<h3>Restarts per deployment")[0]
    assert "ingestor trigger" in replica_chart and "ingestor +1 ready" in replica_chart
    assert "<td>ingestor</td><td>keda</td><td>340</td><td>4</td><td>20.00s</td><td>10.00s</td>" in replica_chart
    run_0 = html.split("Run 0 (")[1].split("Run 1 (")[0]
    assert "<td>ingestor</td><td>none</td><td>340</td><td>0</td><td>-</td><td>did not scale</td>" in run_0
    assert "<th>replica-seconds</th><th>scale-up lag</th>" in html
