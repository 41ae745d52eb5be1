"""The results of a test against another system show that system's workloads (a SystemUnderTest's,
by name, in its namespace), not Elves' deployments: their replicas over the run and their restarts,
read by their pods' names since their containers may be named anything (tier 4's orders system
names both containers `orders`). Until 2026-11-27 they showed Elves' gateway, registry and ingestor,
so pod_restarts and unready_seconds judged a system the test did not target; a StatefulSet's replicas
and the workloads a selector chose (as the platform found them before the test) are in them too. A
real Prometheus, backfilled as kube-state-metrics would have it."""

from __future__ import annotations

import time

import pytest

from elves.engine.models.target import parse_system_under_test
from elves.engine.planning.target import Target
from elves.engine.results import promql
from elves.engine.results.analysis import RunWindow, deployment_results
from elves.engine.results.prometheus import Prometheus
from engine_testkit import PrometheusServer, backfill
from foreign_system import foreign_system

WORKLOADS = {"orders-api": "Deployment", "orders-worker": "Deployment", "orders-db": "StatefulSet"}
# What the platform found before the test: those listed by name, and orders-cache, chosen by its labels.
FOUND = {**WORKLOADS, "orders-cache": "Deployment"}


def shop(named: dict[str, str]) -> Target:
    """Another system in namespace shop whose SystemUnderTest lists `named` (name -> kind) by name
    and its cache by a label."""
    workloads = [{"name": name, "kind": kind} for name, kind in named.items()]
    workloads.append({"selector": {"matchLabels": {"app": "orders-cache"}}})
    return Target.other("shop", parse_system_under_test(foreign_system(workloads=workloads)).spec)
LOAD_END, END = 60.0, 90.0
KILLED_AT = 30.0  # the worker's pod is killed: its container restarts once


def kube_state_metrics(load_start: float) -> list[tuple[str, float, float]]:
    samples = []
    for offset in range(-30, int(END) + 1, 5):
        t, at = float(max(offset, 0)), load_start + offset
        worker_ready = 0 if KILLED_AT <= t < KILLED_AT + 10 else 1
        samples += [
            ('kube_deployment_spec_replicas{namespace="shop",deployment="orders-api"}', 2, at),
            ('kube_deployment_status_replicas_ready{namespace="shop",deployment="orders-api"}', 2, at),
            ('kube_deployment_spec_replicas{namespace="shop",deployment="orders-worker"}', 1, at),
            ('kube_deployment_status_replicas_ready{namespace="shop",deployment="orders-worker"}', worker_ready, at),
            ('kube_pod_container_status_restarts_total{namespace="shop",pod="orders-worker-5d8f9c7b6d-x2k9p",'
             'container="orders"}', 1 if t >= KILLED_AT else 0, at),
            ('kube_pod_container_status_restarts_total{namespace="shop",pod="orders-api-7c9d8b5f4-qq7rt",'
             'container="orders"}', 0, at),
            # A StatefulSet's pod (<name>-<ordinal>), restarted twice before the run: not within it.
            ('kube_pod_container_status_restarts_total{namespace="shop",pod="orders-db-0",container="postgres"}', 2, at),
            ('kube_statefulset_replicas{namespace="shop",statefulset="orders-db"}', 1, at),
            ('kube_statefulset_status_replicas_ready{namespace="shop",statefulset="orders-db"}', 1, at),
            ('kube_deployment_spec_replicas{namespace="shop",deployment="orders-cache"}', 3, at),
            ('kube_deployment_status_replicas_ready{namespace="shop",deployment="orders-cache"}', 3, at),
            # Elves' own ingestor crashing in its namespace during the run must not be read.
            ('kube_pod_container_status_restarts_total{namespace="elves",pod="ingestor-6b7c8d9f5-abcde",'
             'container="ingestor"}', 5 if t >= 20 else 0, at),
            ('kube_deployment_status_replicas_ready{namespace="elves",deployment="ingestor"}', 1, at),
        ]
    return samples


def scraped_processes(load_start: float) -> list[tuple[str, float, float]]:
    """The local mode: no kube-state-metrics for another system's processes, only the scrape targets
    the user lists in own-system.json, each labelled with its workload; one of the worker's two
    processes does not answer for 15 s."""
    samples = []
    for offset in range(-30, int(END) + 1, 5):
        t, at = float(max(offset, 0)), load_start + offset
        down = KILLED_AT <= t < KILLED_AT + 15
        samples += [
            ('up{namespace="own-system",job="orders",workload="orders-worker",instance="127.0.0.1:9101"}', 1, at),
            ('up{namespace="own-system",job="orders",workload="orders-worker",instance="127.0.0.1:9102"}',
             0 if down else 1, at),
            ('up{namespace="own-system",job="orders",workload="orders-api",instance="127.0.0.1:9100"}', 1, at),
        ]
    return samples


@pytest.fixture(scope="module")
def prometheus_and_window(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("target-workloads")
    load_start = float((int(time.time()) - 3 * 3600) // 60 * 60)
    samples = kube_state_metrics(load_start) + scraped_processes(load_start)
    server = PrometheusServer(workdir, data_dir=backfill(workdir, samples))
    yield (Prometheus(server.url, system_namespace="elves"),
           RunWindow("shop/orders-kill/0", load_start, load_start + LOAD_END, load_start + END))
    server.stop()


@pytest.fixture(scope="module")
def target_results(prometheus_and_window):
    yield deployment_results(*prometheus_and_window, None, shop(WORKLOADS), FOUND)


def test_locally_a_workloads_replicas_are_its_scrape_targets_ready_while_they_answer(prometheus_and_window):
    spec = parse_system_under_test(foreign_system(workloads=[{"name": "orders-api"}, {"name": "orders-worker"}])).spec
    local = deployment_results(*prometheus_and_window, None, Target.other("elves", spec, scraped_in="own-system"))
    worker, api = local["orders-worker"], local["orders-api"]
    assert (worker.replicas_min, worker.replicas_max) == (1, 2)
    assert worker.unready_seconds == pytest.approx(15, abs=5)
    assert (api.replicas_min, api.replicas_max, api.unready_seconds) == (1, 1, 0)


def test_the_targets_workloads_are_the_results_deployments_not_elves(target_results):
    assert set(target_results) == set(FOUND)


def test_a_killed_pod_of_the_target_counts_as_its_workloads_restart_and_unready_stretch(target_results):
    worker, api = target_results["orders-worker"], target_results["orders-api"]
    assert (worker.restarts, api.restarts) == (1, 0)
    assert (worker.replicas_min, worker.replicas_max) == (0, 1)
    assert worker.unready_seconds == pytest.approx(10, abs=5)
    assert (api.replicas_min, api.replicas_max, api.unready_seconds) == (2, 2, 0)


def test_a_statefulsets_replicas_are_read_and_its_restarts_before_the_run_are_not_in_it(target_results):
    db = target_results["orders-db"]
    assert (db.restarts, db.replicas_min, db.replicas_max, db.unready_seconds) == (0, 1, 1, 0)


def test_a_workload_its_selector_chose_has_its_figures(target_results):
    cache = target_results["orders-cache"]
    assert (cache.restarts, cache.replicas_min, cache.replicas_max, cache.unready_seconds) == (0, 3, 3, 0)



def test_pods_are_matched_to_their_workload_by_name_exactly():
    query = promql.workload_restarts("5m", ("orders", "orders-api"), namespace="shop")
    # orders' pods are orders-<hash>-<suffix> or orders-<ordinal>; orders-api-<hash>-<suffix> is not one of them.
    assert '"(orders|orders\\\\-api)-(?:[a-z0-9]+-[a-z0-9]+|[0-9]+)"' in query, query


def test_no_named_workload_gives_no_deployment_figures_rather_than_elves():
    assert deployment_results(Prometheus("http://127.0.0.1:9", system_namespace="elves"),
                              RunWindow("t/0", 0.0, 60.0, 90.0), None, shop({})) == {}
