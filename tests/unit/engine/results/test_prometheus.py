"""The Prometheus client against a real Prometheus: answers, and clear errors when it cannot."""

from __future__ import annotations

import pytest

from engine_testkit import free_port
from elves.engine.results.prometheus import Prometheus, PrometheusError


def test_ready_and_a_scalar_query(prometheus_server):
    client = Prometheus(prometheus_server.url)
    assert client.ready() == (True, "")
    assert client.value("1 + 1") == 2
    assert client.value("vector(3)") == 3
    assert client.value('absent_series_name{x="y"}', default=-1) == -1


def test_query_range_returns_points(prometheus_server):
    client = Prometheus(prometheus_server.url)
    (series,) = client.query_range("vector(7)", start=1_000_000, end=1_000_060, step=15)
    assert [v for _, v in series.points] == [7, 7, 7, 7, 7]
    assert series.points[0][0] == 1_000_000


def test_nan_becomes_none(prometheus_server):
    assert Prometheus(prometheus_server.url).value("0/0") is None


def test_bad_promql_names_the_query_and_the_parse_error(prometheus_server):
    client = Prometheus(prometheus_server.url)
    with pytest.raises(PrometheusError) as raised:
        client.query("sum(rate(x[5m])")
    message = str(raised.value)
    assert prometheus_server.url in message and "sum(rate(x[5m])" in message and "parse error" in message


def test_unreachable_prometheus_is_an_error_with_the_url_not_a_crash():
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    client = Prometheus(url, timeout=2)
    ready, reason = client.ready()
    assert not ready and url in reason and "unreachable" in reason
    with pytest.raises(PrometheusError, match="unreachable"):
        client.query("up")


def test_a_server_that_is_not_prometheus(prometheus_server):
    client = Prometheus(prometheus_server.url + "/graph")  # HTML pages, not the API
    with pytest.raises(PrometheusError, match="no JSON|rejected"):
        client.query("up")
