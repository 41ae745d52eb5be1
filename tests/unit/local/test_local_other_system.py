"""Another system judged in the local mode: what serves there and what is refused, naming the field.
Served: its queues, ledger and load, sweeps of load keys, and unready_seconds of a workload its
SystemUnderTest names, read from the scrape targets the user labels with that workload (no
kube-state-metrics reports its processes). Refused: the figures only kube-state-metrics has
(restarts, OOM kills, autoscaling), a workload it does not name, system sweeps. The figures
themselves, from a real Prometheus: tests/unit/engine/results/test_target_workloads_results.py."""

from __future__ import annotations

from elves.constants import OWN_SYSTEM_NAMESPACE
from elves.engine.models.loadtest import parse_loadtest
from elves.engine.models.target import parse_system_under_test
from elves.engine.planning.target import Target
from elves.local.cluster_only import cluster_only_problems
from foreign_system import foreign_system

ORDERS = Target.other("elves", parse_system_under_test(foreign_system(workloads=[
    {"name": "orders-api"}, {"name": "orders-worker"}])).spec, scraped_in=OWN_SYSTEM_NAMESPACE)


def problems(**spec) -> list[str]:
    test = parse_loadtest({"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest", "metadata": {"name": "orders"},
                           "spec": {"target": {"systemUnderTest": "orders"},
                                    "load": {"script": {"path": "orders.js"}, "rate": "20/s", "duration": "30s",
                                             "mix": {"placeOrder": 1}}, **spec}})
    return cluster_only_problems(test, ORDERS)


def test_a_workloads_unready_stretch_and_sweeps_of_load_keys_serve_locally():
    assert problems(slo=[{"metric": "unready_seconds", "workload": "orders-worker", "op": "<", "value": "30s"}],
                    sweep={"load.rate": ["10/s", "20/s"], "load.parallelism": [1, 2]}) == []


def test_restarts_oom_kills_and_autoscaling_figures_of_its_workloads_need_a_cluster():
    refused = problems(slo=[{"metric": "pod_restarts", "workload": "orders-worker", "op": "==", "value": 0},
                            {"metric": "oom_kills", "op": "==", "value": 0},
                            {"metric": "replica_changes", "workload": "orders-worker", "op": "<", "value": 3}])
    assert [p.split(":")[0] for p in refused] == ["spec.slo[0].metric", "spec.slo[1].metric", "spec.slo[2].metric"]
    assert refused[0] == ("spec.slo[0].metric: pod_restarts of another system's workloads needs a cluster"
                          " (kube-state-metrics counts their pods' restarts and OOM kills, and their autoscaling);"
                          " locally only unready_seconds is read, from the scrape targets its own-system file labels"
                          " with their workload")


def test_a_workload_its_systemundertest_does_not_name_is_refused_as_on_a_cluster():
    (problem,) = problems(slo=[{"metric": "unready_seconds", "workload": "billing", "op": "<", "value": "30s"}])
    assert problem == ("spec.slo[0].workload: 'billing' is not a workload SystemUnderTest 'orders' lists by name"
                       " (it lists orders-api, orders-worker)")


def test_a_sweep_of_its_workloads_is_refused_naming_the_key():
    (problem,) = problems(sweep={"system.replicas.ingestor": [1, 2]})
    assert problem.startswith("spec.sweep.system.replicas.ingestor: acts on Elves' own deployments")
