"""Objectives by workload (spec.slo[].workload): any of the target's workloads by name on every
per-workload metric, `deployment` kept as the old spelling; a name the target does not list is
refused before the test starts, naming the field; a named workload without figures is never a 0."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from elves.engine.models.errors import SpecError
from elves.engine.models.loadtest import parse_loadtest
from elves.engine.models.objectives import POD_METRICS, Objective
from elves.engine.models.status import ScalingFigures, DeploymentResult, RunResults, Window
from elves.engine.models.target import parse_system_under_test
from elves.engine.planning.target import Target
from elves.engine.planning.target_scope import objective_problems
from elves.engine.results.verdict import evaluate

LOAD = {"scenario": "system-mix", "rate": "60/min", "duration": "1m"}
ORDERS = parse_system_under_test({
    "apiVersion": "elves.dev/v1alpha1", "kind": "SystemUnderTest", "metadata": {"name": "orders"},
    "spec": {"workloads": [{"name": "orders-api"}, {"name": "orders-worker", "kind": "StatefulSet"},
                           {"selector": {"matchLabels": {"app": "shop"}}}],
             "queues": {"rabbitmq": ["orders.in"]}, "ledger": {"registry": {}}}}).spec


def spec(*slo: dict):
    return parse_loadtest({"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest", "metadata": {"name": "t"},
                           "spec": {"load": LOAD, "slo": list(slo)}}).spec


def problems_of(*slo: dict) -> list[str]:
    try:
        spec(*slo)
    except SpecError as exc:
        return exc.problems
    return []


@pytest.mark.parametrize("metric", POD_METRICS)
def test_every_per_workload_metric_takes_a_workload_by_name(metric):
    (objective,) = spec({"metric": metric, "workload": "orders-worker", "op": "<", "value": 1}).slo
    assert objective.workload_name == "orders-worker" and objective.name == f"{metric}{{orders-worker}}"


def test_deployment_is_the_old_spelling_and_not_both_nor_on_other_metrics():
    (objective,) = spec({"metric": "pod_restarts", "deployment": "ingestor", "op": "==", "value": 0}).slo
    assert objective.workload_name == "ingestor" and objective.name == "pod_restarts{ingestor}"
    both = problems_of({"metric": "pod_restarts", "deployment": "ingestor", "workload": "ingestor", "op": "==",
                        "value": 0})
    assert any("set workload or its old spelling deployment, not both" in p for p in both), both
    (wrong,) = problems_of({"metric": "lost_requests", "workload": "orders-worker", "op": "==", "value": 0})
    assert wrong.startswith("spec.slo[0]") and "workload applies only to pod_restarts" in wrong
    # Not a Kubernetes name: refused by the model (and by the CRD generated from it).
    assert any("spec.slo[0].workload" in p for p in problems_of(
        {"metric": "oom_kills", "workload": "Orders_Worker", "op": "==", "value": 0}))


def test_a_workload_the_target_does_not_list_by_name_is_refused_naming_the_field():
    test = spec({"metric": "pod_restarts", "workload": "orders-worker", "op": "==", "value": 0},
                {"metric": "unready_seconds", "workload": "shop-web", "op": "<", "value": "10s"},
                {"metric": "oom_kills", "deployment": "ingestor", "op": "==", "value": 0})
    assert objective_problems(test, Target.other("team", ORDERS), "SystemUnderTest team/orders") == [
        "spec.slo[1].workload: 'shop-web' is not a workload SystemUnderTest team/orders lists by name"
        " (it lists orders-api, orders-worker)",
        "spec.slo[2].deployment: 'ingestor' is not a workload SystemUnderTest team/orders lists by name"
        " (it lists orders-api, orders-worker)"]
    # A test of Elves' own system: its three deployments, in either spelling.
    assert objective_problems(test, Target(), "") == [
        "spec.slo[0].workload: 'orders-worker' is not one of Elves' deployments (it lists gateway, registry, ingestor)",
        "spec.slo[1].workload: 'shop-web' is not one of Elves' deployments (it lists gateway, registry, ingestor)"]


def results(**deployments: DeploymentResult) -> RunResults:
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    return RunResults(window=Window(start=now, end=now), load_seconds=60.0, deployments=deployments)


def test_the_verdict_judges_the_named_workload_only_and_never_a_missing_one_as_zero():
    figures = results(**{"orders-worker": DeploymentResult(restarts=2, oom_kills=1, unready_seconds=30.0,
                                                          scaling=ScalingFigures(replica_changes=3)),
                         "orders-api": DeploymentResult(restarts=0, unready_seconds=5.0)})
    checks = evaluate([Objective.model_validate(o) for o in (
        {"metric": "pod_restarts", "workload": "orders-worker", "op": "==", "value": 0},
        {"metric": "pod_restarts", "workload": "orders-api", "op": "==", "value": 0},
        {"metric": "oom_kills", "workload": "orders-worker", "op": "==", "value": 0},
        {"metric": "unready_seconds", "workload": "orders-api", "op": "<", "value": "10s"},
        {"metric": "replica_changes", "workload": "orders-worker", "op": "<=", "value": 3},
        {"metric": "pod_restarts", "workload": "orders-gone", "op": "==", "value": 0},
    )], figures).checks
    assert [(c.name, c.observed, c.ok) for c in checks] == [
        ("pod_restarts{orders-worker}", 2, False), ("pod_restarts{orders-api}", 0, True),
        ("oom_kills{orders-worker}", 1, False), ("unready_seconds{orders-api}", 5.0, True),
        ("replica_changes{orders-worker}", 3, True), ("pod_restarts{orders-gone}", None, False)]
    assert "no figures for workload orders-gone" in checks[-1].detail
