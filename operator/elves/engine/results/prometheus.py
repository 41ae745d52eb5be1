"""A small client for Prometheus's HTTP API: ready, query, query_range, with timeouts.

Every failure (connection refused, timeout, a 4xx for bad PromQL, a non-JSON answer)
becomes PrometheusError with the URL and what Prometheus said, so the runner can end a
test in phase Error with a reason instead of crashing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import requests

from elves.engine.results.blips import TransientError

DEFAULT_TIMEOUT_SECONDS = 10.0


class PrometheusError(RuntimeError):
    """Prometheus could not answer; the message says which server and why."""


class PrometheusUnavailable(PrometheusError, TransientError):
    """Prometheus did not answer in time, could not be reached or answered 5xx: it may be back soon."""

    harness_reason = "PrometheusUnreachable"


@dataclass(frozen=True)
class Sample:
    labels: dict[str, str]
    value: float | None  # None for NaN / a histogram where a number was expected
    timestamp: float = 0.0
    histogram: dict[str, Any] | None = None


@dataclass(frozen=True)
class Series:
    labels: dict[str, str]
    points: list[tuple[float, float | None]] = field(default_factory=list)
    histograms: list[tuple[float, dict[str, Any]]] = field(default_factory=list)


def _number(text: str) -> float | None:
    value = float(text)
    return None if math.isnan(value) or math.isinf(value) else value


class Prometheus:
    """The Prometheus that watches one system. `system_namespace` is the namespace that
    system's own series carry (the platform's Platform.system_namespace): the engine asks
    its queries of the system's queues, deployments and JVMs for that namespace only. A
    client without one can still ask k6's series, which a test id tells apart."""

    def __init__(self, url: str, timeout: float = DEFAULT_TIMEOUT_SECONDS, system_namespace: str = ""):
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.system_namespace = system_namespace
        self._session = requests.Session()

    def __repr__(self) -> str:
        return f"Prometheus({self.url}, system namespace {self.system_namespace or '(none)'})"

    def ready(self) -> tuple[bool, str]:
        """Whether Prometheus answers /-/ready; the reason in words when not."""
        try:
            response = self._session.get(f"{self.url}/-/ready", timeout=self.timeout)
        except requests.RequestException as exc:
            return False, f"Prometheus at {self.url} is unreachable: {_cause(exc)}"
        if response.status_code != 200:
            return False, f"Prometheus at {self.url} is not ready: HTTP {response.status_code} {response.text.strip()[:200]}"
        return True, ""

    def query(self, expr: str, time: float | None = None) -> list[Sample]:
        """An instant query; a scalar result comes back as one sample without labels."""
        params: dict[str, Any] = {"query": expr}
        if time is not None:
            params["time"] = f"{time:.3f}"
        data = self._get("/api/v1/query", params)
        kind, result = data["resultType"], data["result"]
        if kind == "scalar":
            return [Sample({}, _number(result[1]), float(result[0]))]
        if kind == "vector":
            samples = []
            for item in result:
                if "histogram" in item:
                    ts, histogram = item["histogram"]
                    samples.append(Sample(item["metric"], None, float(ts), histogram))
                else:
                    samples.append(Sample(item["metric"], _number(item["value"][1]), float(item["value"][0])))
            return samples
        if kind == "matrix":
            raise PrometheusError(f"{expr!r} is a range vector; use query_matrix()")
        raise PrometheusError(f"unexpected result type {kind!r} for {expr!r}")

    def query_matrix(self, expr: str, time: float | None = None) -> list[Series]:
        """An instant query of a range vector (`x[5m]`, a subquery): every raw sample."""
        params: dict[str, Any] = {"query": expr}
        if time is not None:
            params["time"] = f"{time:.3f}"
        data = self._get("/api/v1/query", params)
        if data["resultType"] != "matrix":
            raise PrometheusError(f"{expr!r} gave a {data['resultType']}, not a range vector")
        return [_series(item) for item in data["result"]]

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[Series]:
        """Values of `expr` from start to end every `step` seconds."""
        params = {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{max(step, 0.001):g}"}
        data = self._get("/api/v1/query_range", params)
        return [_series(item) for item in data["result"]]

    def value(self, expr: str, time: float | None = None, default: float | None = None) -> float | None:
        """The first sample's value, or `default` when the result is empty."""
        samples = self.query(expr, time)
        return samples[0].value if samples else default

    def by_label(self, expr: str, label: str, time: float | None = None) -> dict[str, float | None]:
        """{label value: sample value} for a vector result."""
        return {s.labels.get(label, ""): s.value for s in self.query(expr, time)}

    def _get(self, path: str, params: dict[str, Any]) -> dict[str, Any]:
        try:
            # POST (form-encoded) keeps long queries out of URL length limits; the API takes both.
            response = self._session.post(f"{self.url}{path}", data=params, timeout=self.timeout)
        except requests.Timeout:
            raise PrometheusUnavailable(f"Prometheus at {self.url} did not answer within {self.timeout:g}s") from None
        except requests.RequestException as exc:
            raise PrometheusUnavailable(f"Prometheus at {self.url} is unreachable: {_cause(exc)}") from None
        # 5xx: overloaded, restarting, or a query cancelled by its timeout; a 4xx is the query's fault.
        error = PrometheusUnavailable if response.status_code >= 500 else PrometheusError
        try:
            body = response.json()
        except ValueError:
            raise error(
                f"Prometheus at {self.url} answered HTTP {response.status_code} with no JSON:"
                f" {response.text.strip()[:200]!r}") from None
        if response.status_code != 200 or body.get("status") != "success":
            raise error(f"Prometheus at {self.url} rejected {params.get('query')!r}: "
                        f"{body.get('error') or f'HTTP {response.status_code}'}")
        return body["data"]


def _series(item: dict[str, Any]) -> Series:
    return Series(
        labels=item["metric"],
        points=[(float(t), _number(v)) for t, v in item.get("values", [])],
        histograms=[(float(t), h) for t, h in item.get("histograms", [])],
    )


def _cause(exc: Exception) -> str:
    """The innermost reason of a requests error ("Connection refused"), not its repr chain."""
    text = str(exc)
    for marker in ("Connection refused", "Name or service not known", "timed out", "No route to host"):
        if marker in text:
            return marker
    return text[:200]
