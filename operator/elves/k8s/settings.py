"""The operator's settings, read once from ELVES_* environment variables.

The chart sets the first six (charts/elves/templates/operator.yaml); the others have
defaults that suit a cluster and can be changed through `operator.env`. A bad value
stops the operator at start-up with the variable named, never later in a handler.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from elves.constants import SYSTEM_NAMESPACE
from elves.engine.credentials import DEFAULT_MAX_SECONDS, RUN_CREDENTIAL_MAX_ENV
from elves.engine.runner import Timeouts
from elves.engine.units import parse_duration, parse_memory

# The k6 image of the runner pods: k6 at tools/versions.env's K6_VERSION (a unit test
# keeps them in step), so runners behave like the k6 the local mode and the tests use.
DEFAULT_K6_IMAGE = "grafana/k6:1.8.1"
DEFAULT_PROMETHEUS_URL = "http://kube-prometheus-stack-prometheus.monitoring.svc:9090"
DEFAULT_TICK_SECONDS = 1.0


def _seconds(env: dict[str, str], name: str, default: str) -> float:
    text = env.get(name) or default
    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        raise ValueError(f"{name}: {text!r} is not a duration (e.g. 90s, 5m, 2h): {exc}") from None
    if seconds <= 0:
        raise ValueError(f"{name}: {text!r} must be longer than 0s")
    return seconds


def _count(env: dict[str, str], name: str, default: int) -> int:
    text = env.get(name) or str(default)
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{name}: {text!r} is not a whole number of at least 1")
    return int(text)


def _limit(env: dict[str, str], name: str, default: str, parse: Callable[[str], float]) -> float:
    text = env.get(name) or default
    try:
        value = parse(text)
    except ValueError as exc:
        raise ValueError(f"{name}: {text!r}: {exc}") from None
    if value <= 0:
        raise ValueError(f"{name}: {text!r} must be more than 0")
    return value


def _url(env: dict[str, str], name: str, default: str) -> str:
    url = (env.get(name) or default).rstrip("/")
    if url and not url.startswith(("http://", "https://")):
        raise ValueError(f"{name}: {url!r} is not an http:// or https:// URL")
    return url


def tick_seconds_from_env(env: dict[str, str] | None = None) -> float:
    """How often the timer advances each LoadTest; kopf needs it when the handlers are registered."""
    return _seconds(dict(os.environ if env is None else env), "ELVES_TICK_SECONDS", f"{DEFAULT_TICK_SECONDS}s")


@dataclass(frozen=True)
class OperatorSettings:
    # Namespace of the system under test: its Deployments, StatefulSets, Secret and the test lock.
    system_namespace: str = SYSTEM_NAMESPACE
    # The chart's Secret holding `jwt-secret`, the key the k6 tokens are signed with.
    secret_name: str = "elves"
    # The gateway as k6 runner pods reach it (ELVES_BASE_URL of the scripts).
    gateway_url: str = f"http://gateway.{SYSTEM_NAMESPACE}.svc:8080"
    # The registry as the operator and the runners reach it (the ledger; registry-mix calls it).
    registry_url: str = f"http://registry.{SYSTEM_NAMESPACE}.svc:8081"
    # Prometheus the engine reads results from and k6 remote-writes to (receiver on).
    prometheus_url: str = DEFAULT_PROMETHEUS_URL
    # Grafana for the report link and the phase/fault annotations ("" = no Grafana).
    grafana_url: str = ""
    # A Grafana service-account token for the annotations ("" = anonymous) ...
    grafana_token: str = ""
    # ... or a Grafana user and password (deployments.sh gives the admin's, from a Secret).
    grafana_user: str = ""
    grafana_password: str = ""
    # Report ConfigMaps kept per LoadTest name (they outlive the LoadTest); older ones are deleted.
    reports_kept: int = 10
    # Image of the k6 runner pods.
    k6_image: str = DEFAULT_K6_IMAGE
    # The k6 binary the operator packs built-in scenarios with (`k6 archive`).
    k6_binary: str = "k6"
    # How often the timer advances each LoadTest (seconds); faults fire within this.
    tick_seconds: float = DEFAULT_TICK_SECONDS
    # How long a LoadTest waits for another one to free the system before it ends in Error.
    lock_timeout_seconds: float = 2 * 3600.0
    # How long the Deployments may take to be ready after a change or a reset.
    system_ready_timeout_seconds: float = 600.0
    # From the TestRun's creation to k6 running: image pulls and the initializer take time.
    load_start_timeout_seconds: float = 600.0
    # How long a runner pod may stay unschedulable (an autoscaler may add a node) before Error.
    unschedulable_grace_seconds: float = 120.0
    # Timeout of one call to the registry's ledger or to Grafana.
    http_timeout_seconds: float = 10.0
    # The most replicas, and the most memory per container, a LoadTest may give a service
    # (spec.system, its sweeps and its faults); the chart's operator.limits.
    max_replicas: int = 10
    max_memory_bytes: int = 4 * 1024**3
    # The longest a run's credentials (its tokens, its registry run credential) may live; a
    # LoadTest whose run needs longer ends in Error before anything changes (operator.limits).
    run_credential_max_seconds: float = float(DEFAULT_MAX_SECONDS)

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> "OperatorSettings":
        env = dict(os.environ if env is None else env)
        namespace = env.get("ELVES_SYSTEM_NAMESPACE") or SYSTEM_NAMESPACE
        return cls(
            system_namespace=namespace,
            secret_name=env.get("ELVES_SECRET_NAME") or "elves",
            gateway_url=_url(env, "ELVES_GATEWAY_URL", f"http://gateway.{namespace}.svc:8080"),
            registry_url=_url(env, "ELVES_REGISTRY_URL", f"http://registry.{namespace}.svc:8081"),
            prometheus_url=_url(env, "ELVES_PROMETHEUS_URL", DEFAULT_PROMETHEUS_URL),
            grafana_url=_url(env, "ELVES_GRAFANA_URL", ""),
            grafana_token=env.get("ELVES_GRAFANA_TOKEN", ""),
            grafana_user=env.get("ELVES_GRAFANA_USER", ""),
            grafana_password=env.get("ELVES_GRAFANA_PASSWORD", ""),
            reports_kept=_count(env, "ELVES_REPORTS_KEPT", 10),
            k6_image=env.get("ELVES_K6_IMAGE") or DEFAULT_K6_IMAGE,
            k6_binary=env.get("ELVES_K6") or "k6",
            tick_seconds=tick_seconds_from_env(env),
            lock_timeout_seconds=_seconds(env, "ELVES_LOCK_TIMEOUT", "2h"),
            system_ready_timeout_seconds=_seconds(env, "ELVES_SYSTEM_READY_TIMEOUT", "10m"),
            load_start_timeout_seconds=_seconds(env, "ELVES_LOAD_START_TIMEOUT", "10m"),
            unschedulable_grace_seconds=_seconds(env, "ELVES_UNSCHEDULABLE_GRACE", "2m"),
            http_timeout_seconds=_seconds(env, "ELVES_HTTP_TIMEOUT", "10s"),
            max_replicas=int(_limit(env, "ELVES_MAX_REPLICAS", "10", int)),
            max_memory_bytes=int(_limit(env, "ELVES_MAX_MEMORY", "4Gi", parse_memory)),
            run_credential_max_seconds=_seconds(env, RUN_CREDENTIAL_MAX_ENV, f"{DEFAULT_MAX_SECONDS}s"),
        )

    def timeouts(self) -> Timeouts:
        """The phase machine's deadlines, with the cluster's longer waits."""
        return Timeouts(lock=self.lock_timeout_seconds, system_ready=self.system_ready_timeout_seconds,
                        load_start=self.load_start_timeout_seconds, run_credential_max=self.run_credential_max_seconds)
