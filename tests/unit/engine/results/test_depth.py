"""A queue's depth read three ways (peak, steady state, trend at the load's end) with the transient
of the load's first part set apart; and the engine records it with each queue's results, read from
a real Prometheus."""

from __future__ import annotations

import time

import pytest

from elves.engine.results.analysis import RunWindow, queue_results
from elves.engine.results.depth import depth_over_load, transient_only, trend
from elves.engine.results.prometheus import Prometheus
from engine_testkit import PrometheusServer, backfill


def every_five(values: list[float]) -> list[tuple[float, float]]:
    """Readings every 5 s from the load's start, as RabbitMQ's scrapes give them."""
    return [(5.0 * i, v) for i, v in enumerate(values)]


# The committed case-1c run: one ingestor at 800 requests a minute for 62 s, still piling up at the end.
GROWING = every_five([0, 0, 14, 23, 30, 37, 43, 50, 56, 62, 68, 74, 80])
# The committed case-1a run: a rise right after the reset that empties within 20 s, then nothing.
TRANSIENT = every_five([0, 0, 5, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0])


def test_a_queue_still_growing_at_the_loads_end_has_no_steady_state():
    depth = depth_over_load(GROWING, 62.0)
    assert depth is not None and trend(depth) == "growing"
    assert (depth.peak, depth.peak_at) == (80.0, 60.0)
    assert 60 < depth.trend < 90  # messages a minute over the last third


def test_the_transient_after_a_reset_is_set_apart_from_the_peak():
    depth = depth_over_load(TRANSIENT, 61.0)
    assert depth is not None and transient_only(depth)
    assert (depth.transient, depth.peak, depth.steady, trend(depth)) == (5.0, 0.0, 0.0, "flat")
    # A pile-up after the first third is the peak, not a transient.
    later = depth_over_load(every_five([0, 0, 0, 0, 0, 30, 40, 40, 41, 40, 40, 41, 40]), 61.0)
    assert later is not None and not transient_only(later) and later.peak == 41.0 and trend(later) == "flat"
    assert later.steady == 40.0


def test_a_queue_that_jitters_by_a_few_messages_is_flat_and_one_that_empties_is_falling():
    assert trend(depth_over_load(every_five([0, 3, 1, 0, 2, 0, 3, 0, 2, 1, 3, 0, 2]), 61.0)) == "flat"
    assert trend(depth_over_load(every_five([0, 90, 100, 100, 100, 100, 100, 100, 100, 80, 60, 40, 20]), 61.0)) == "falling"


def test_too_few_readings_in_the_last_third_tell_nothing():
    assert depth_over_load([(0.0, 3.0), (50.0, 4.0), (55.0, None)], 60.0) is None
    assert depth_over_load([], 60.0) is None


BASE = (int(time.time()) - 2 * 3600) // 60 * 60  # inside Prometheus's lookback


@pytest.fixture(scope="module")
def prom(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("depth")
    samples = []
    for i, depth in enumerate([0, 0, 14, 23, 30, 37, 43, 50, 56, 62, 68, 74, 80, 70, 40, 0, 0]):
        samples.append(('rabbitmq_detailed_queue_messages_ready{namespace="elves",queue="elves.ingestor.data.in"}',
                        depth, BASE + 5 * i))
        samples.append(('rabbitmq_detailed_queue_messages_unacked{namespace="elves",queue="elves.ingestor.data.in"}',
                        0, BASE + 5 * i))
    server = PrometheusServer(workdir, data_dir=backfill(workdir, samples))
    yield Prometheus(server.url, system_namespace="elves")
    server.stop()


def test_the_engine_records_each_queues_depth_over_the_load(prom):
    window = RunWindow("elves/case/0", BASE, BASE + 62, BASE + 80)
    (name, result), = queue_results(prom, window).items()
    assert name == "elves.ingestor.data.in" and result.max == 80.0
    depth = result.over_load
    assert depth is not None and trend(depth) == "growing" and depth.peak == 80.0
    assert depth.transient == 30.0 and depth.transient_seconds == pytest.approx(62 / 3, abs=0.01)
