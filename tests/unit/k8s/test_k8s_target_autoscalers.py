"""Autoscaling of another system's workloads (elves.engine.models.workload_autoscaler): what a
SystemUnderTest may describe, what a LoadTest may ask of it, each refusal naming the field and
what is on offer, and the objects the operator builds from the two (elves.k8s.target_autoscalers).

What a user would notice if these broke: a LoadTest that autoscales a workload its team never
offered (or with a setting its trigger does not take) accepted and failing halfway on the
cluster; a ScaledObject carrying a broker address Elves had to read from the team's Secret; a
local run that silently ignores autoscaling."""

from __future__ import annotations

from typing import Any

import pytest
from foreign_system import foreign_system

from elves.engine.models.errors import SpecError
from elves.engine.models.loadtest import parse_loadtest
from elves.engine.models.status import AutoscalerSnapshot, SystemSnapshot, WorkloadAutoscalerSnapshot
from elves.engine.models.target import parse_system_under_test
from elves.engine.planning.target import Target
from elves.engine.planning.target_scope import workload_problems
from elves.engine.results.analysis import Scaler, target_scalers
from elves.engine.results.autoscaling_figures import HPA as HPA_FIGURES
from elves.engine.results.autoscaling_figures import KEDA
from elves.k8s.autoscalers import HPA, SCALED_OBJECT
from elves.k8s.faults import Caps, cluster_problems
from elves.k8s.target import resolve_target
from elves.k8s.target_autoscalers import described, run_autoscalers
from elves.local.cluster_only import cluster_only_problems

WORKER = {"name": "orders-worker", "autoscaler": {"name": "orders-worker-scaler", "rabbitmq": {
    "queue": "orders.in", "authenticationRef": "orders-rabbitmq"}}}
WORKLOADS = [
    {"name": "orders-api", "autoscaler": {"cpu": {}}},
    WORKER,
    {"name": "orders-db", "kind": "StatefulSet", "autoscaler": {"prometheus": {
        "serverAddress": "http://prometheus.monitoring:9090", "query": "sum(rate(orders_saved_total[1m]))"}}},
    {"name": "orders-kafka-worker", "autoscaler": {"kafka": {
        "group": "orders", "topic": "orders", "bootstrapServers": ["kafka.shop:9092", "kafka-1.shop:9092"]}}},
    {"name": "orders-audit"},
]
WHAT = "SystemUnderTest shop/orders"


def sut(workloads: list[dict[str, Any]] = WORKLOADS, **spec: Any):
    return parse_system_under_test(foreign_system(workloads=workloads, **spec)).spec


def rabbit_fed():
    """The orders system on its RabbitMQ queue (spec.queues takes one kind: the Kafka-fed worker
    is judged in a system of its own below)."""
    return sut([w for w in WORKLOADS if w["name"] != "orders-kafka-worker"])


def loadtest(**spec: Any):
    return parse_loadtest({"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest", "metadata": {"name": "t"},
                           "spec": {"target": {"systemUnderTest": "orders"},
                                    "load": {"script": {"configMap": {"name": "s", "file": "s.js"}},
                                             "rate": "60/min", "duration": "1m"}, **spec}}).spec


def problems(target_spec, **spec: Any) -> list[str]:
    return workload_problems(loadtest(**spec), Target.other("shop", target_spec), WHAT)


def test_a_workload_describes_exactly_one_trigger_on_a_queue_the_system_is_judged_on():
    assert set(described(rabbit_fed())) == {"orders-api", "orders-worker", "orders-db"}
    for autoscaler, says in (
            ({}, "set exactly one of rabbitmq, prometheus, kafka (KEDA triggers) or cpu (the HPA)"),
            ({"cpu": {}, "rabbitmq": WORKER["autoscaler"]["rabbitmq"]}, "set exactly one of"),
            ({"rabbitmq": {"queue": "payments.in", "authenticationRef": "a"}},
             "rabbitmq.queue 'payments.in' is not one of spec.queues.rabbitmq (orders.in)"),
            ({"rabbitmq": {"queue": "orders.in", "authenticationRef": "a", "host": "amqp://u:p@h"}}, "host")):
        with pytest.raises(SpecError) as refused:
            sut([{"name": "orders-worker", "autoscaler": autoscaler}])
        assert says in str(refused.value), str(refused.value)
    with pytest.raises(SpecError) as refused:
        sut([{"selector": {"matchLabels": {"app": "w"}}, "autoscaler": {"cpu": {}}}])
    assert "an autoscaler needs a workload listed by name" in str(refused.value)
    with pytest.raises(SpecError) as refused:
        sut([WORKLOADS[3]], queues={"kafka": [{"group": "orders", "topic": "payments"}]})
    assert "kafka orders:orders is not one of spec.queues.kafka (orders:payments)" in str(refused.value)


def test_a_loadtest_autoscales_what_the_system_under_test_offers_and_nothing_else():
    system = rabbit_fed()
    assert problems(system, system={"autoscaling": {
        "orders-worker": {"maxReplicas": 4, "messagesPerReplica": 10}, "orders-api": {"cpuUtilization": 60},
        "orders-db": {"threshold": 2.5}}}, sweep={"system.autoscaling.orders-worker.mode": ["fixed", "keda"]}) == []
    found = problems(system, system={"replicas": {"orders-worker": 2}, "autoscaling": {
        "orders-audit": {}, "orders-api": {"messagesPerReplica": 5}, "orders-worker": {"minReplicas": 6, "maxReplicas": 5},
        "orders-db": {}}}, sweep={"system.autoscaling.payments.mode": ["fixed"]})
    assert sorted(p.split(":")[0] for p in found) == [
        "spec.sweep.system.autoscaling.payments.mode", "spec.system.autoscaling.orders-api.messagesPerReplica",
        "spec.system.autoscaling.orders-audit", "spec.system.autoscaling.orders-db.threshold",
        "spec.system.autoscaling.orders-worker", "spec.system.replicas.orders-worker"]
    said = {p.split(":")[0]: p for p in found}
    assert said["spec.system.autoscaling.orders-audit"].endswith(
        "'orders-audit' is not a workload SystemUnderTest shop/orders describes an autoscaler for (it describes one"
        " for orders-api, orders-worker, orders-db)")
    assert "unknown field (allowed here: mode, minReplicas, maxReplicas, cpuUtilization)" in said[
        "spec.system.autoscaling.orders-api.messagesPerReplica"]
    assert "minReplicas 6 is above maxReplicas 5" in said["spec.system.autoscaling.orders-worker"]
    assert "set its minReplicas and maxReplicas instead" in said["spec.system.replicas.orders-worker"]
    # A sweep point's value is read as the spec's are: a bad one names its point.
    (swept,) = problems(system, sweep={"system.autoscaling.orders-api.mode": ["hpa", "keda"]})
    assert swept.startswith("spec.system.autoscaling.orders-api.mode: ") and "(sweep point 1:" in swept


def test_a_test_of_elves_own_refuses_a_workload_that_is_none_of_its_deployments():
    document = {"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest", "metadata": {"name": "t"},
                "spec": {"load": {"scenario": "system-mix", "rate": "60/min", "duration": "1m"},
                         "system": {"autoscaling": {"ingestr": {"mode": "keda"}}}}}
    # Without spec.target: the model refuses it (elves validate, the operator's admission).
    with pytest.raises(SpecError) as refused:
        parse_loadtest(document)
    assert "system.autoscaling.ingestr: 'ingestr' is not one of Elves' deployments (gateway, registry, ingestor)" in str(
        refused.value)
    # Naming the built-in SystemUnderTest: the operator refuses it against Elves' own.
    spec = parse_loadtest({**document, "spec": {**document["spec"], "target": {"systemUnderTest": "elves"}}}).spec
    (problem,) = workload_problems(spec, Target(), "")
    assert problem.startswith("spec.system.autoscaling.ingestr: 'ingestr' is not one of Elves' deployments")


def test_the_local_mode_refuses_another_systems_autoscaling_naming_the_field():
    test = parse_loadtest({"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest", "metadata": {"name": "t"},
                           "spec": {"target": {"systemUnderTest": "orders"},
                                    "load": {"script": {"configMap": {"name": "s", "file": "s.js"}},
                                             "rate": "60/min", "duration": "1m"},
                                    "sweep": {"system.autoscaling.orders-worker.maxReplicas": [2, 4]}}})
    found = cluster_only_problems(test, Target.other("shop", rabbit_fed()))
    assert found[0].startswith("spec.system.autoscaling.orders-worker: autoscaling needs a cluster")


def test_the_objects_carry_the_loadtests_settings_and_the_teams_trigger_never_a_secret():
    system = rabbit_fed()
    spec = loadtest(system={"autoscaling": {"orders-worker": {"maxReplicas": 4, "messagesPerReplica": 10,
                                                              "cooldown": "30s"},
                                            "orders-api": {"mode": "fixed"}, "orders-db": {"threshold": 2.5}}})
    scalers = {s.workload: s for s in run_autoscalers(spec.system.autoscaling, system)}
    worker = scalers["orders-worker"]
    assert (worker.kind, worker.name) == (SCALED_OBJECT, "orders-worker-scaler")
    assert worker.spec() == {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "orders-worker"},
        "minReplicaCount": 1, "maxReplicaCount": 4, "pollingInterval": 15, "cooldownPeriod": 30,
        "advanced": {"horizontalPodAutoscalerConfig": {"behavior": {"scaleDown": {"stabilizationWindowSeconds": 30}}}},
        "triggers": [{"type": "rabbitmq", "metadata": {"protocol": "amqp", "queueName": "orders.in",
                                                       "mode": "QueueLength", "value": "10"},
                      "authenticationRef": {"name": "orders-rabbitmq"}}]}
    db = scalers["orders-db"].spec()
    assert db["scaleTargetRef"]["kind"] == "StatefulSet"
    assert db["triggers"] == [{"type": "prometheus", "metadata": {
        "serverAddress": "http://prometheus.monitoring:9090", "query": "sum(rate(orders_saved_total[1m]))",
        "threshold": "2.5"}}]
    assert (scalers["orders-api"].kind, scalers["orders-api"].settings.mode) == (HPA, "fixed")

    kafka_system = sut([WORKLOADS[3]], queues={"kafka": [{"group": "orders", "topic": "orders"}]})
    spec = loadtest(system={"autoscaling": {"orders-kafka-worker": {"messagesPerReplica": 100}}})
    (kafka,) = run_autoscalers(spec.system.autoscaling, kafka_system)
    assert kafka.spec()["triggers"] == [{"type": "kafka", "metadata": {
        "bootstrapServers": "kafka.shop:9092,kafka-1.shop:9092", "consumerGroup": "orders", "topic": "orders",
        "lagThreshold": "100"}}]
    hpa = run_autoscalers(loadtest(system={"autoscaling": {"orders-api": {"maxReplicas": 3}}}).system.autoscaling,
                          system)[0]
    assert hpa.spec()["metrics"][0]["resource"]["target"]["averageUtilization"] == 70
    assert hpa.spec()["maxReplicas"] == 3


def test_a_scale_fault_on_an_autoscaled_workload_and_a_maximum_over_the_cap_are_refused():
    system = rabbit_fed()
    spec = loadtest(system={"autoscaling": {"orders-worker": {"maxReplicas": 40}}},
                    faults=[{"at": "10s", "scale": {"workload": "orders-worker", "replicas": 0}},
                            {"at": "20s", "scale": {"workload": "orders-api", "replicas": 2}}])
    (problem,) = workload_problems(spec, Target.other("shop", system), WHAT)
    assert problem.startswith("spec.faults[0].scale: orders-worker is autoscaled (spec.system.autoscaling.orders-worker)")
    assert cluster_problems(spec, Caps(max_replicas=20, max_memory_bytes=2**34)) == [
        "spec.system.autoscaling.orders-worker.maxReplicas: 40 is more than the 20 replicas this cluster allows"
        " (operator.limits.maxReplicas)"]
    fixed = loadtest(system={"autoscaling": {"orders-worker": {"mode": "fixed"}}},
                     faults=[{"at": "10s", "scale": {"workload": "orders-worker", "replicas": 0}}])
    assert workload_problems(fixed, Target.other("shop", system), WHAT) == []


class NoKeda:
    """An API server that serves the SystemUnderTest but not KEDA's API."""

    def system_under_test(self, namespace: str, name: str) -> dict[str, Any]:
        return foreign_system(name, namespace, workloads=WORKLOADS[:3] + WORKLOADS[4:])

    def serves(self, group: str, version: str) -> bool:
        return False


def test_keda_on_a_cluster_without_its_api_is_refused_before_anything_changes():
    spec = loadtest(system={"autoscaling": {"orders-api": {"maxReplicas": 3}}},
                    sweep={"system.autoscaling.orders-worker.mode": ["fixed", "keda"]})
    found = resolve_target(NoKeda(), "shop", spec, "elves", fault_namespaces=("shop",))[1]
    assert found == ["spec.system.autoscaling.orders-worker: its SystemUnderTest scales it with KEDA, and this cluster"
                     " does not serve KEDA's API (keda.sh/v1alpha1): install KEDA, or use mode: fixed"]


def test_the_seal_covers_the_teams_autoscalers_and_still_holds_a_snapshot_from_before_them():
    plain = SystemSnapshot(workloads_namespace="shop")
    # What an operator from before workloadAutoscalers sealed: the same bytes, so its seal holds.
    assert b"workloadAutoscalers" not in plain.sealed_content()
    kept = SystemSnapshot(workloads_namespace="shop", workload_autoscalers={"orders-worker": WorkloadAutoscalerSnapshot(
        kind="ScaledObject", name="orders-worker-scaler", before=AutoscalerSnapshot(spec={"maxReplicaCount": 2}))})
    changed = kept.model_copy(deep=True)
    changed.workload_autoscalers["orders-worker"].before.spec["maxReplicaCount"] = 50
    assert kept.sealed_content() != changed.sealed_content() != plain.sealed_content()


def test_the_figures_of_an_autoscaled_workload_read_its_triggers_queue_in_its_namespace():
    system = rabbit_fed()
    spec = loadtest(system={"autoscaling": {"orders-worker": {"messagesPerReplica": 10}, "orders-api": {},
                                            "orders-db": {"mode": "fixed"}}})
    scalers = target_scalers(spec.system.autoscaling, Target.other("shop", system))
    worker = scalers["orders-worker"]
    assert (worker.autoscaler, worker.queue, worker.settings.messages_per_replica) == (KEDA, "orders.in", 10)
    assert 'namespace="shop"' in worker.depth and "orders" in worker.depth
    assert (scalers["orders-api"].autoscaler, scalers["orders-api"].depth) == (HPA_FIGURES, None)
    assert scalers["orders-db"] == Scaler(), "mode: fixed: figures for the cost, no autoscaler"
    kafka_system = sut([WORKLOADS[3]], queues={"kafka": [{"group": "orders", "topic": "orders"}]})
    spec = loadtest(system={"autoscaling": {"orders-kafka-worker": {}}})
    kafka = target_scalers(spec.system.autoscaling, Target.other("shop", kafka_system))["orders-kafka-worker"]
    assert (kafka.autoscaler, kafka.queue) == (KEDA, "orders:orders") and "kafka_consumergroup_lag" in kafka.depth


def test_a_target_workload_named_like_one_of_elves_deployments_is_the_targets():
    system = sut([{"name": "ingestor", "autoscaler": {"cpu": {}}}])
    spec = loadtest(system={"autoscaling": {"ingestor": {"maxReplicas": 3}}},
                    faults=[{"at": "10s", "scale": {"workload": "ingestor", "replicas": 0}}])
    (problem,) = workload_problems(spec, Target.other("shop", system), WHAT)
    assert problem.startswith("spec.faults[0].scale: ingestor is autoscaled")
    (scaler,) = run_autoscalers(spec.system.autoscaling, system)
    assert (scaler.kind, scaler.spec()["maxReplicas"]) == (HPA, 3)
