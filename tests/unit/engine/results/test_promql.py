"""PromQL building: selectors, escaping, the run-window queries, and that Prometheus parses them all."""

from __future__ import annotations

import inspect
import re

import pytest
import requests

from elves.engine.results import promql
from elves.engine.results.analysis import failures_of
from elves.engine.results.prometheus import Sample


def test_selector_quotes_and_regexes():
    assert promql.selector("m") == "m"
    assert promql.selector("m", testid="ns/a\"b/0", endpoint=None) == 'm{testid="ns/a\\"b/0"}'
    assert promql.selector("m", status="~2..") == 'm{status=~"2.."}'


def test_window_rounds_up_to_whole_seconds():
    assert promql.window_for(0.2) == "1s"
    assert promql.window_for(90.01) == "91s"


def test_k6_totals_use_the_last_counter_value_of_the_run():
    expr = promql.k6_requests("local/q/0", "120s")
    assert expr == 'sum by (endpoint) (max_over_time(k6_http_reqs_total{testid="local/q/0"}[120s]))'
    assert 'status=~"2.."' in promql.k6_requests_ok("local/q/0", "120s")
    assert 'expected_response="false"' in promql.k6_requests_failed("local/q/0", "120s", endpoint="getData")
    assert promql.k6_dropped_iterations("t", "1s") == 'sum(max_over_time(k6_dropped_iterations_total{testid="t"}[1s]))'


def test_timeouts_are_k6_error_code_1050():
    # Failed requests are read by endpoint, status and error code; those with k6's 1050 timed out.
    assert "sum by (endpoint, status, error_code)" in promql.k6_failures("t", "60s")
    failures = failures_of([
        Sample({"endpoint": "getData", "status": "0", "error_code": "1050"}, 3.0),
        Sample({"endpoint": "getData", "status": "0", "error_code": "1000"}, 2.0),
        Sample({"endpoint": "getStatus", "status": "503", "error_code": "1503"}, 1.0),
    ])
    assert failures.counts == {"getData": 5, "getStatus": 1}
    assert failures.timeouts == {"getData": 3, "getStatus": 0}
    assert failures.reasons == {"getData": {"k6 1050 (timed out)": 3, "k6 1000 (no answer: EOF or another error)": 2},
                                "getStatus": {"HTTP 503": 1}}


def test_latency_quantile_reads_native_histograms():
    assert promql.k6_latency_quantile(0.99, "t", endpoint="getHistory") == (
        'histogram_quantile(0.99, sum (rate(k6_http_req_duration_seconds{testid="t",endpoint="getHistory"}[30s])))')
    assert "sum by (endpoint)" in promql.k6_latency_quantile(0.5, "t", by="endpoint")


def test_queue_depth_adds_ready_and_unacked_of_every_queue_and_dlq():
    expr = promql.queue_depth(namespace="elves")
    assert "rabbitmq_detailed_queue_messages_ready|rabbitmq_detailed_queue_messages_unacked" in expr
    assert r'elves\\.ingestor\\.data\\.in\\.dlq' in expr
    assert expr.startswith("sum by (queue) (")
    assert promql.queue_depth(["a.b"], namespace="team-a") == (
        'sum by (queue) ({namespace="team-a",'
        '__name__=~"rabbitmq_detailed_queue_messages_ready|rabbitmq_detailed_queue_messages_unacked",'
        'queue=~"a\\\\.b"})')


def test_kafka_lag_is_a_depth_per_group_and_topic_in_the_targets_namespace():
    assert promql.kafka_lag([("orders-worker", "orders.placed")], namespace="shop") == (
        'sum by (queue) (label_join(kafka_consumergroup_lag{namespace="shop",consumergroup="orders-worker",'
        'topic="orders.placed"}, "queue", ":", "consumergroup", "topic"))')
    two = promql.kafka_lag_scraped_at([("a", "t"), ("b", "t")], namespace="shop")
    assert two == ('min(timestamp(kafka_consumergroup_lag{namespace="shop",consumergroup="a",topic="t"} or '
                   'kafka_consumergroup_lag{namespace="shop",consumergroup="b",topic="t"}))')


def test_deployment_queries_select_by_container_and_deployment():
    assert 'container=~"gateway|registry|ingestor"' in promql.restarts("60s", namespace="elves")
    assert 'reason="OOMKilled"' in promql.oom_kills("60s", namespace="elves")
    assert "label_replace(" in promql.replicas_desired(["ingestor"], namespace="elves")
    assert "kube_deployment_status_replicas_ready" in promql.replicas_ready(namespace="elves")


# Arguments for any query builder; `namespace` is a sentinel no other part of a query contains.
SENTINEL = "sentinel-ns"
ARGUMENTS = {"test_id": "t/x/0", "window": "60s", "rate_window": "60s", "quantile": 0.99,
             "pods": ["elves-x-0-1-abcde"], "workloads": ["orders-api", "orders-worker"],
             "kinds": {"orders-api": "Deployment", "orders-db": "StatefulSet"},
             "pairs": [("orders-worker", "orders.placed"), ("audit", "orders.placed")]}
# Public functions of promql that build no query of their own.
# (deepest_over wraps a depth query it is given: Elves' own, built with its namespace, or a target's.)
HELPERS = {"window_for", "window_since", "quote", "literal_text", "regex_of", "selector", "system_selector",
           "deepest_over"}


def query_builders() -> dict[str, object]:
    return {name: f for name, f in inspect.getmembers(promql, inspect.isfunction)
            if f.__module__ == promql.__name__ and not name.startswith("_") and name not in HELPERS}


def build(function, **extra) -> str:
    parameters = inspect.signature(function).parameters
    return function(**{n: v for n, v in ARGUMENTS.items() if n in parameters}, **extra)


def selectors(expr: str) -> list[tuple[str, str]]:
    """(metric, matchers) of every series selector in `expr`."""
    return re.findall(r"([A-Za-z_:][\w:]*)?\{([^{}]*)\}", expr)


def test_every_query_of_the_systems_series_selects_its_namespace():
    # On a shared cluster another team's Deployment called gateway (its restarts, replicas,
    # JVM, its queue of the same name) must not reach our figures: every query of the system's
    # own series takes the namespace, and every selector in it is limited to that namespace.
    system = {name: f for name, f in query_builders().items() if "namespace" in inspect.signature(f).parameters}
    assert {"queue_depth", "queue_depth_max", "deepest_queue", "queue_depth_deepest", "queue_depth_scraped_at",
            "queue_depth_total", "queue_consumers", "queue_publish_rate", "queue_deliver_rate", "queue_ack_rate",
            "queue_pileup_rate", "replicas_desired", "replicas_ready", "restarts_total", "restarts", "oom_kills",
            "jvm_heap_max", "jvm_gc_seconds", "cpu_cores"} <= set(system)
    for name, function in system.items():
        namespace = inspect.signature(function).parameters["namespace"]
        assert namespace.kind is inspect.Parameter.KEYWORD_ONLY and namespace.default is inspect.Parameter.empty, name
        expr = build(function, namespace=SENTINEL)
        found = selectors(expr)
        assert found and all(f'namespace="{SENTINEL}"' in matchers for _, matchers in found), (name, expr)
        with pytest.raises(ValueError, match="needs the system's namespace"):
            build(function, namespace="")


def test_the_queries_without_a_namespace_ask_only_k6_whose_test_id_tells_runs_apart():
    for name, function in query_builders().items():
        if "namespace" in inspect.signature(function).parameters:
            continue
        expr = build(function)
        found = selectors(expr)
        assert found, (name, expr)
        for metric, matchers in found:
            assert metric.startswith("k6_") and 'testid="t/x/0"' in matchers, (name, expr)


ALL_QUERIES = [
    promql.k6_requests("t/x/0", "60s"), promql.k6_requests_ok("t/x/0", "60s"),
    promql.k6_requests_failed("t/x/0", "60s"), promql.k6_dropped_iterations("t/x/0", "60s"),
    promql.k6_dropped_iterations_so_far("t/x/0"), promql.k6_duration_histograms("t/x/0", "60s"),
    promql.k6_request_rate("t/x/0"), promql.k6_error_rate("t/x/0", endpoint="getData"),
    promql.k6_latency_quantile(0.95, "t/x/0", by="endpoint"), promql.k6_mean_latency("t/x/0", "60s"),
    promql.k6_vus("t/x/0"), promql.k6_vus_max("t/x/0", "60s"), promql.k6_samples_present("t/x/0", "60s"),
    *(build(f, namespace=SENTINEL) for f in query_builders().values()
      if "namespace" in inspect.signature(f).parameters),
    promql.k6_failures("t/x/0", "60s"), promql.k6_retries("t/x/0", "60s"),
    promql.k6_requests_ok_so_far("t/x/0", "60s"),
]


def ask(prometheus_url: str, expr: str) -> tuple[int, dict]:
    """Prometheus' own answer to an instant query: (HTTP status, the JSON body)."""
    response = requests.post(f"{prometheus_url}/api/v1/query", data={"query": expr}, timeout=10)
    return response.status_code, response.json()


@pytest.mark.parametrize("expr", ALL_QUERIES)
def test_prometheus_parses_every_query(expr, prometheus_server):
    # An empty Prometheus: what is checked is that it parses and types the query, not the data.
    status, body = ask(prometheus_server.url, expr)
    expected = "matrix" if expr.endswith("]") else "vector"  # a raw range selector, or an instant vector
    assert (status, body["status"], body["data"]["resultType"]) == (200, "success", expected), body


def test_a_query_prometheus_cannot_parse_is_refused_with_its_reason(prometheus_server):
    status, body = ask(prometheus_server.url, f"{promql.queue_depth(namespace=SENTINEL)} +")
    assert (status, body["status"], body["errorType"]) == (400, "error", "bad_data")
    assert "parse error" in body["error"]
