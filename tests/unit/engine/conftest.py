"""Shared helpers for the engine's unit tests: LoadTest documents built from small overrides."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from elves.engine.models.loadtest import LoadTest, parse_loadtest
from elves.engine.results.prometheus import Prometheus
from engine_testkit import RUN, PrometheusServer, backfill

BASE_SPEC: dict[str, Any] = {
    "load": {"scenario": "system-mix", "rate": "120/min", "duration": "2m"},
}


def document(spec: dict[str, Any] | None = None, name: str = "unit", **spec_overrides: Any) -> dict[str, Any]:
    """A LoadTest document: BASE_SPEC, replaced by `spec`, then updated key by key."""
    body = copy.deepcopy(spec if spec is not None else BASE_SPEC)
    body.update(copy.deepcopy(spec_overrides))
    return {"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest", "metadata": {"name": name}, "spec": body}


def loadtest(spec: dict[str, Any] | None = None, **spec_overrides: Any) -> LoadTest:
    return parse_loadtest(document(spec, **spec_overrides))


@pytest.fixture
def make_loadtest():
    return loadtest


@pytest.fixture
def make_document():
    return document


@pytest.fixture(scope="module")
def prometheus_server(tmp_path_factory):
    """An empty Prometheus for this test module."""
    server = PrometheusServer(tmp_path_factory.mktemp("prometheus"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def known_run_prometheus(tmp_path_factory):
    """A Prometheus holding engine_testkit.RUN's history (backfilled), as a client of the
    system in RUN.namespace."""
    workdir = tmp_path_factory.mktemp("known-run-prometheus")
    server = PrometheusServer(workdir, data_dir=backfill(workdir, RUN.history()))
    yield Prometheus(server.url, system_namespace=RUN.namespace)
    server.stop()
