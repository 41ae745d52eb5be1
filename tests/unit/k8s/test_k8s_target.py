"""The SystemUnderTest a LoadTest judges on a cluster: the one spec.target names, in the
LoadTest's namespace, or the built-in one; a missing one ends the test in Error before anything
changes, naming spec.target.systemUnderTest; the drain waits on the target's queues."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from elves.constants import WORK_QUEUES
from elves.engine.models.loadtest import parse_loadtest
from elves.engine.models.target import Queues, builtin_system
from elves.engine.planning.target import builtin_spec
from elves.engine.results.analysis import RunWindow
from elves.engine.runner.drain import queue_blockers
from elves.k8s.driver import Driver
from elves.k8s.settings import OperatorSettings
from elves.k8s.target import judged, resolve_target

LOAD = {"scenario": "system-mix", "rate": "60/min", "duration": "1m"}
ORDERS = {"apiVersion": "elves.dev/v1alpha1", "kind": "SystemUnderTest", "metadata": {"name": "orders"},
          "spec": {"workloads": [{"name": "orders-api"}], "queues": {"rabbitmq": ["orders.in"]},
                   "ledger": {"registry": {}}}}


class TargetsKube:
    """The API server as the driver reads it: SystemUnderTests by (namespace, name), one LoadTest."""

    def __init__(self, systems: dict[tuple[str, str], dict] | None = None, refuse: int | None = None,
                 loadtest: dict | None = None):
        self.systems, self.refuse, self.body, self.saved = systems or {}, refuse, loadtest, []

    def system_under_test(self, namespace: str, name: str) -> dict | None:
        if self.refuse:
            raise ApiException(status=self.refuse)
        return copy.deepcopy(self.systems.get((namespace, name)))

    def loadtest(self, namespace: str, name: str) -> dict | None:
        return copy.deepcopy(self.body)

    def replace_loadtest_status(self, body: dict) -> dict:
        self.saved.append(body["status"])
        return body

    def serves(self, group: str, version: str) -> bool:
        return False


def spec(**fields: Any):
    return parse_loadtest({"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest", "metadata": {"name": "t"},
                           "spec": {"load": LOAD, **fields}}).spec


def test_no_target_is_the_builtin_one_or_the_engines_builtin_system_where_the_chart_has_none():
    shipped = copy.deepcopy(builtin_system())
    shipped["spec"]["queues"] = {"rabbitmq": ["elves.ingestor.data.in"]}
    target, problems, _ = resolve_target(TargetsKube({("elves", "elves"): shipped}), "team", spec(), "elves")
    assert problems == [] and target.queues.rabbitmq == ["elves.ingestor.data.in"]
    for kube in (TargetsKube(), TargetsKube(refuse=403)):  # none (or no CRD: 404), or not readable
        target, problems, _ = resolve_target(kube, "team", spec(), "elves")
        assert problems == [] and target.queues.rabbitmq == list(WORK_QUEUES)


def test_a_named_target_is_read_in_the_loadtests_namespace():
    kube = TargetsKube({("team", "orders"): ORDERS, ("elves", "orders"): builtin_system()})
    target, problems, _ = resolve_target(kube, "team", spec(target={"systemUnderTest": "orders"}), "elves")
    assert problems == [] and [w.name for w in target.workloads] == ["orders-api"]


def test_a_test_of_another_system_may_not_fault_scale_reset_or_sweep_elves_own_deployments():
    # The operator's deployment faults act on Elves' deployments: aimed at another system's test,
    # they would kill Elves' own. spec.system names the target's workloads, and Elves' are not
    # among them. Refused, each naming its field.
    kube = TargetsKube({("team", "orders"): ORDERS, ("elves", "elves"): builtin_system()})
    acting = {"faults": [{"at": "10s", "killPod": {"deployment": "ingestor"}}], "system": {"replicas": {"gateway": 2}},
              "reset": True, "sweep": {"system.replicas.ingestor": [1, 2], "load.rate": ["1/s", "2/s"]}}
    target, problems, _ = resolve_target(kube, "team", spec(target={"systemUnderTest": "orders"}, **acting), "elves",
                                         fault_namespaces=("team",))
    assert [p.split(":")[0] for p in problems] == [
        "spec.faults[0]", "spec.reset", "spec.system.replicas.gateway", "spec.sweep.system.replicas.ingestor"]
    assert problems[0].endswith("acts on Elves' own deployments, not on the workloads of SystemUnderTest team/orders"
                                " (name one of its workloads in workload instead)")
    assert problems[2].endswith("'gateway' is not a workload SystemUnderTest team/orders lists by name"
                                " (it lists orders-api)")
    # Elves' own, named or not, may have them all; another system's test without them is fine.
    for named in ({"target": {"systemUnderTest": "elves"}}, {}):
        assert resolve_target(kube, "elves", spec(**named, **acting), "elves")[1] == []
    assert resolve_target(kube, "team", spec(target={"systemUnderTest": "orders"}), "elves")[1] == []


SETTABLE = copy.deepcopy(ORDERS)
SETTABLE["spec"]["workloads"] = [{"name": "orders-api"},
                                 {"name": "orders-worker", "settings": {"env": ["WORKER_CONCURRENCY"], "resources": True}}]


def test_a_test_of_another_system_sets_what_its_system_under_test_offers_and_nothing_else():
    kube = TargetsKube({("team", "orders"): SETTABLE})
    offered = {"system": {"replicas": {"orders-api": 2}, "env": {"orders-worker": {"WORKER_CONCURRENCY": "4"}},
                          "resources": {"orders-worker": {"memory": "256Mi"}}},
               "sweep": {"system.replicas.orders-worker": [1, 2], "system.env.orders-worker.WORKER_CONCURRENCY": [1, 8],
                         "load.rate": ["1/s", "2/s"]}}
    target = {"systemUnderTest": "orders"}
    assert resolve_target(kube, "team", spec(target=target, **offered), "elves", fault_namespaces=("team",))[1] == []
    refused = {"system": {"env": {"orders-api": {"WORKER_CONCURRENCY": "4"}, "orders-worker": {"DB_URL": "x"}},
                          "resources": {"orders-api": {"cpu": "1"}}, "autoscaling": {"ingestor": {"mode": "keda"}}},
               "sweep": {"system.resources.orders-api.memory": ["1Gi"]}}
    problems = resolve_target(kube, "team", spec(target=target, **refused), "elves", fault_namespaces=("team",))[1]
    assert [p.split(":")[0] for p in problems] == [
        "spec.system.resources.orders-api", "spec.system.env.orders-api.WORKER_CONCURRENCY",
        "spec.system.env.orders-worker.DB_URL", "spec.sweep.system.resources.orders-api.memory",
        "spec.system.autoscaling.ingestor"]
    assert problems[1].endswith("WORKER_CONCURRENCY is not a setting SystemUnderTest team/orders offers for"
                                " orders-api (its settings.env: none)")
    assert problems[2].endswith("(its settings.env: WORKER_CONCURRENCY)")
    assert "does not let a LoadTest set the resources of orders-api" in problems[0]
    assert problems[4].endswith("'ingestor' is not a workload SystemUnderTest team/orders describes an autoscaler"
                                " for (it describes one for none)")
    # Where the chart does not let the operator act on workloads, spec.system is refused too.
    problems = resolve_target(kube, "team", spec(target=target, **offered), "elves")[1]
    assert [p.split(":")[0] for p in problems] == [
        "spec.system", "spec.sweep.system.replicas.orders-worker", "spec.sweep.system.env.orders-worker.WORKER_CONCURRENCY"]
    assert "operator.targetNamespaces" in problems[0]


@pytest.mark.parametrize("kube, says", [
    (TargetsKube({("elves", "orders"): ORDERS}), "there is no SystemUnderTest 'orders' in namespace team"),
    (TargetsKube(refuse=403), "the operator may not read SystemUnderTest 'orders' in namespace team"),
    (TargetsKube({("team", "orders"): {**ORDERS, "spec": {**ORDERS["spec"], "queues": {}}}}),
     "SystemUnderTest team/orders is invalid: spec.queues: set exactly one of rabbitmq"),
])
def test_a_missing_unreadable_or_invalid_target_is_a_problem_naming_the_field(kube, says):
    target, problems, _ = resolve_target(kube, "team", spec(target={"systemUnderTest": "orders"}), "elves")
    assert target is None and problems == [f"spec.target.systemUnderTest: {says}" + problems[0].split(says, 1)[1]]


def test_a_loadtest_whose_target_is_missing_ends_in_error_invalid_spec_before_it_starts():
    body = {"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest",
            "metadata": {"name": "t", "namespace": "team", "uid": "u", "generation": 1},
            "spec": {"load": LOAD, "target": {"systemUnderTest": "orders"}}, "status": {}}
    kube = TargetsKube(loadtest=body)
    events: list[tuple[str, str, str]] = []
    Driver(OperatorSettings(), kube).tick("team", "t", lambda *event: events.append(event))  # type: ignore[arg-type]
    (status,) = kube.saved
    assert status["phase"] == "Error"
    error = next(c for c in status["conditions"] if c["type"] == "Failed")
    assert error["reason"] == "InvalidSpec"
    assert error["message"].startswith("spec.target.systemUnderTest: there is no SystemUnderTest 'orders'")
    assert "snapshot" not in status  # nothing was changed, so nothing is to restore


def test_a_named_targets_series_are_read_in_the_loadtests_namespace_the_builtins_in_the_systems():
    def context(namespace: str = "team", **fields: Any):
        test = parse_loadtest({"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest",
                               "metadata": {"name": "t", "namespace": namespace}, "spec": {"load": LOAD, **fields}})
        return judged(namespace, test.spec, OperatorSettings().system_namespace, builtin_spec())

    named = context(target={"systemUnderTest": "orders"})
    assert (named.own, named.namespace) == (False, "team")
    assert (context().own, context().namespace) == (True, "elves")
    # The built-in one named as such, where the chart ships it, is read as the default is.
    assert context("elves", target={"systemUnderTest": "elves"}).own
    assert context("team", target={"systemUnderTest": "elves"}).namespace == "team"


class QueuePrometheus:
    system_namespace = "elves"

    def __init__(self, depths: dict[str, float], scraped: float | None):
        self.depths, self.scraped, self.queries, self.times = depths, scraped, [], []

    def value(self, query: str, time: float | None = None) -> float | None:
        self.queries.append(query)
        self.times.append(time)
        return self.scraped

    def by_label(self, query: str, label: str, time: float | None = None) -> dict[str, float]:
        self.queries.append(query)
        self.times.append(time)
        return self.depths


def test_the_drain_waits_on_the_targets_queues():
    window = RunWindow("team/t/0", 100.0, 200.0, 260.0)
    prom = QueuePrometheus({"orders.in": 3.0, "orders.retry": 0.0}, scraped=250.0)
    assert queue_blockers(Queues(rabbitmq=["orders.in", "orders.retry"]), prom, window) == ["orders.in holds 3"]
    # Both the scrape time and the depths select the target's queues (PromQL escapes the dots).
    assert len(prom.queries) == 2 and all('queue=~"orders\\\\.in|orders\\\\.retry"' in q for q in prom.queries)
    # Read as of the window's end, where the analysis reads the final depths: never a later sample
    # than the results (a drain that saw 0 while the results said the queue still held messages).
    assert prom.times == [window.end, window.end]
    early = QueuePrometheus({}, scraped=150.0)
    assert queue_blockers(Queues(rabbitmq=["orders.in"]), early, window) == \
        ["waiting for a queue depth sample taken after the load"]
    # A named target's queues carry its own namespace's label; without one, the system's.
    assert all('namespace="elves"' in q for q in prom.queries)
    team = QueuePrometheus({"orders.in": 0.0}, scraped=250.0)
    assert queue_blockers(Queues(rabbitmq=["orders.in"]), team, window, "team") == []
    assert len(team.queries) == 2 and all('namespace="team"' in q for q in team.queries)
    # A consumer group's lag on a topic is a queue `<group>:<topic>`, read in the target's namespace once
    # a sample taken after the load is in; a group without any sample is not known to be drained.
    lagging = QueuePrometheus({"orders-worker:orders.placed": 40.0}, scraped=250.0)
    kafka = Queues(kafka=[{"group": "orders-worker", "topic": "orders.placed"}])
    assert queue_blockers(kafka, lagging, window, "shop") == ["orders-worker:orders.placed holds 40"]
    assert all('kafka_consumergroup_lag{namespace="shop",consumergroup="orders-worker"' in q for q in lagging.queries)
    assert queue_blockers(kafka, QueuePrometheus({}, scraped=150.0), window, "shop") == \
        ["waiting for a consumer-group lag sample taken after the load"]
    assert queue_blockers(kafka, QueuePrometheus({}, scraped=None), window, "shop")[0].startswith(
        "no consumer-group lag samples in Prometheus")
    assert queue_blockers(kafka, QueuePrometheus({"orders-worker:orders.placed": 0.0}, scraped=250.0), window,
                          "shop") == []
    own = QueuePrometheus({"a": 2.0}, scraped=None)
    assert queue_blockers(Queues(promql="sum by (queue) (depth)"), own, window) == ["a holds 2"]
    assert own.queries == ["sum by (queue) (depth)"]


def test_the_target_is_pinned_by_uid_and_generation_and_any_change_named():
    from elves.engine.models.status import TargetPin
    from elves.k8s.target import target_changes

    body = {**ORDERS, "metadata": {"name": "orders", "namespace": "team", "uid": "u-1", "generation": 3}}
    _, _, pin = resolve_target(TargetsKube({("team", "orders"): body}), "team", spec(target={"systemUnderTest": "orders"}),
                               "elves")
    assert pin == TargetPin(namespace="team", name="orders", uid="u-1", generation=3)
    assert target_changes(None, pin) == [] and target_changes(pin, pin) == []  # nothing pinned yet; unchanged
    edited = pin.model_copy(update={"generation": 4})
    (problem,) = target_changes(pin, edited)
    assert problem.startswith("spec.target.systemUnderTest: SystemUnderTest team/orders was edited (generation 3 -> 4)"
                              " while the test ran")
    assert "was deleted and created again" in target_changes(pin, pin.model_copy(update={"uid": "u-2"}))[0]
    assert "team/orders is gone" in target_changes(pin, None)[0]
    # The engine's own profile (no object to read) pins nothing.
    assert resolve_target(TargetsKube(), "team", spec(), "elves")[2] is None


def test_a_fault_may_name_a_workload_the_target_lists_by_name_and_only_in_a_test_of_another_system():
    orders = {**ORDERS, "spec": {**ORDERS["spec"], "workloads": [{"name": "orders-api"}, {"name": "orders-worker"},
                                                                 {"selector": {"matchLabels": {"app": "shop"}}}]}}
    kube = TargetsKube({("team", "orders"): orders, ("elves", "elves"): builtin_system()})

    def problems_of(namespace: str, *faults: dict, allowed: tuple[str, ...] = ("team",), **fields: Any) -> list[str]:
        return resolve_target(kube, namespace, spec(faults=list(faults), **fields), "elves", allowed)[1]

    kill_worker = {"at": "10s", "killPod": {"workload": "orders-worker"}}
    scale_api = {"at": "20s", "scale": {"workload": "orders-api", "replicas": 0}}
    assert problems_of("team", kill_worker, scale_api, target={"systemUnderTest": "orders"}) == []
    # One it does not list by name (a selector gives none), named in the field.
    (problem,) = problems_of("team", {"at": "10s", "restart": {"workload": "shop-web"}},
                             target={"systemUnderTest": "orders"})
    assert problem == ("spec.faults[0].restart.workload: 'shop-web' is not a workload SystemUnderTest team/orders lists"
                       " by name (it lists orders-api, orders-worker)")
    # Only where the chart lets the operator act on workloads (operator.targetNamespaces).
    (problem,) = problems_of("team", kill_worker, allowed=("shop",), target={"systemUnderTest": "orders"})
    assert problem == ("spec.faults[0].killPod.workload: the operator may not act on workloads in namespace team (the"
                       " chart's operator.targetNamespaces lists where it may)")
    # A test of Elves' own system names its deployments, by default or by name.
    for named in ({}, {"target": {"systemUnderTest": "elves"}}):
        (problem,) = problems_of("elves", kill_worker, **named)
        assert problem.startswith("spec.faults[0].killPod.workload: names a workload of another system, but this test"
                                  " judges Elves' own")
