"""Every PromQL expression the dashboards, the alerts and the verdict use returns data
from the Prometheus of a real local-mode run: the session's one quickstart run (conftest.py),
whose ingestor is killed under load, so queue, restart and k6 series all exist. (This file sorts
right after test_harness_quickstart.py, which starts that run, so the queries' 10-minute windows
still hold all of it.)

Grafana cannot run here, and a misspelt metric or label only shows as an empty panel,
so the expressions are run as Grafana and the engine would run them: the dashboards'
JSON with their variables filled in, the alerts' expressions without their thresholds,
and every query builder of elves.engine.results.promql called for the run's test id. The system's
namespace is the one the local platform reports (LocalPlatform.system_namespace): a series
of the system without that `namespace` label would leave a panel or a figure empty.
"""

from __future__ import annotations

import inspect
import json
import re
import time

import pytest
import requests

from elves.constants import DEAD_LETTER_QUEUES, DEPLOYMENTS, WORK_QUEUES
from elves.engine.results import promql
from elves.local.platform import LocalPlatform
from test_harness_kit import REPO

DASHBOARDS = sorted((REPO / "charts" / "elves" / "dashboards").glob("*.json"))
NAMESPACE = LocalPlatform.system_namespace
WINDOW = "10m"
# Series that exist only after something rare happened; an empty answer for these is
# right when it did not happen in the run (the run kills a pod, it does not exhaust memory).
ONLY_AFTER_AN_EVENT = {
    "oom": "kube_pod_container_status_last_terminated_reason",  # checked to exist instead
    "dropped": "k6_dropped_iterations_total",  # an honest run drops nothing
    "retries": "k6_elves_retries_total",  # only the journeys scenario retries
    "failures": 'expected_response="false"',  # a healthy run has no failed request
    "timeouts": 'error_code="1050"',  # k6's request timeout: none in a healthy run
}


@pytest.fixture(scope="module")
def finished_run(local_stack, quickstart_run):
    assert quickstart_run.exit_code in (0, 1, 3), quickstart_run.output  # a verdict, whatever it is; not a harness error
    return local_stack, quickstart_run.status["runs"][0]["testId"]


def query_range(stack, expr: str) -> list[dict]:
    end = time.time()
    answer = requests.get(f"{stack.url('prometheus')}/api/v1/query_range", timeout=30, params={
        "query": expr, "start": end - 900, "end": end, "step": "15s"})
    assert answer.status_code == 200, f"{expr}\n{answer.text[:500]}"
    return answer.json()["data"]["result"]


def query_any(stack, expr: str) -> list[dict]:
    """Over the last minutes like a panel; a range selector (some engine queries are raw
    histograms) only as an instant query, the way the engine asks it."""
    if re.search(r"\[[^\]]+\]$", expr.strip()):
        answer = requests.get(f"{stack.url('prometheus')}/api/v1/query", timeout=30, params={"query": expr})
        assert answer.status_code == 200, f"{expr}\n{answer.text[:500]}"
        return answer.json()["data"]["result"]
    return query_range(stack, expr)


def rare(expr: str) -> bool:
    return any(name in expr for name in ONLY_AFTER_AN_EVENT.values())


def dashboard_expressions(test_id: str) -> list[tuple[str, str]]:
    """(panel title, expression) of every dashboard target, with Grafana's variables filled in."""
    variables = {"$__rate_interval": "1m", "$__interval": "15s", "$__range": WINDOW,
                 "$testid": test_id, "$application": ".*", "$queue": ".*",
                 "$deployment": ".*", "$namespace": NAMESPACE}
    found = []
    for path in DASHBOARDS:
        for panel in json.loads(path.read_text())["panels"]:
            for target in panel.get("targets", []):
                expr = target["expr"]
                for name in sorted(variables, key=len, reverse=True):
                    expr = expr.replace(name, variables[name]).replace("${" + name[1:] + "}", variables[name])
                found.append((f"{path.name}: {panel['title']}", expr))
    return found


def test_every_dashboard_panel_returns_data(finished_run):
    stack, test_id = finished_run
    expressions = dashboard_expressions(test_id)
    assert len(expressions) > 20
    unresolved = [(title, expr) for title, expr in expressions if re.search(r"\$[A-Za-z_{]", expr)]
    assert not unresolved, f"Grafana variables this test does not know: {unresolved}"
    empty = [(title, expr) for title, expr in expressions if not rare(expr) and not query_range(stack, expr)]
    assert not empty, "panels without data:\n" + "\n".join(f"{t}\n    {e}" for t, e in empty)


def test_every_alert_expression_returns_data(finished_run):
    stack, _ = finished_run
    containers = DEPLOYMENTS + ("rabbitmq", "postgres")
    # The alerts of charts/elves/templates/prometheusrule.yaml, without their thresholds.
    expressions = {
        "ElvesQueuePileUp": promql.queue_depth(WORK_QUEUES, namespace=NAMESPACE),
        "ElvesQueueWithoutConsumers": promql.queue_consumers(namespace=NAMESPACE),
        "ElvesMessagesDeadLettered": promql.queue_depth(DEAD_LETTER_QUEUES, namespace=NAMESPACE),
        "ElvesContainerCrashLooping": promql.restarts("15m", containers, namespace=NAMESPACE),
    }
    empty = {name: expr for name, expr in expressions.items() if not query_range(stack, expr)}
    assert not empty, f"alert expressions without data: {empty}"
    # ElvesContainerOOMKilled needs an OOM kill to return anything; its series must exist.
    assert query_range(stack, ONLY_AFTER_AN_EVENT["oom"]), "no last-terminated-reason series at all"


def engine_arguments(function, test_id: str) -> dict[str, object] | None:
    """Arguments for one query builder of elves.engine.results.promql, or None when it builds no query."""
    values = {"test_id": test_id, "window": WINDOW, "rate_window": "1m", "quantile": 0.99,
              "seconds": 600.0, "namespace": NAMESPACE}
    arguments = {}
    for name, parameter in inspect.signature(function).parameters.items():
        if name in values:
            arguments[name] = values[name]
        elif parameter.default is inspect.Parameter.empty:
            return None  # a helper that takes raw text (selector, quote, ...), not a query
    return arguments


def test_every_engine_query_returns_data(finished_run):
    stack, test_id = finished_run
    builders = [(name, f) for name, f in inspect.getmembers(promql, inspect.isfunction)
                if f.__module__ == promql.__name__ and not name.startswith("_")]
    queries = {}
    for name, function in builders:
        arguments = engine_arguments(function, test_id)
        if arguments is not None and arguments:
            expr = function(**arguments)
            if isinstance(expr, str) and ("{" in expr or "(" in expr):
                queries[name] = expr
    assert len(queries) > 15, sorted(queries)
    empty = {name: expr for name, expr in queries.items() if not rare(expr) and not query_any(stack, expr)}
    assert not empty, "engine queries without data:\n" + "\n".join(f"{n}: {e}" for n, e in empty.items())
