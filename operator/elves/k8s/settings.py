"""The operator's settings, read once from ELVES_* environment variables.

The chart sets the first seven (charts/elves/templates/operator.yaml; ELVES_KEDA_* too where the
cluster serves KEDA's API); the others have defaults that suit a cluster and can be changed
through `operator.env`. A bad value stops the operator at start-up with the variable named,
never later in a handler.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from elves.constants import SYSTEM_NAMESPACE
from elves.engine.models.units import parse_duration, parse_memory
from elves.engine.planning.credentials import max_seconds_from_env
from elves.engine.planning.timeouts import DEFAULT_MAX_SECONDS
from elves.engine.runner import Timeouts
from elves.envvars import count, read
from elves.k8s.autoscalers import Keda
from elves.k8s.faults import Caps
from elves.k8s.namespace_guard import namespace_problems
from elves.k8s.policy import Policy, RunnerRules
from elves.k8s.sql_secrets import EXAMPLE as SQL_EXAMPLE
from elves.k8s.sql_secrets import SqlSecrets
from elves.k8s.sql_secrets import VALUE as SQL_SECRETS_VALUE

# The k6 image of the runner pods: k6 at tools/versions.env's K6_VERSION (a unit test
# keeps them in step), so runners behave like the k6 the local mode and the tests use.
DEFAULT_K6_IMAGE = "grafana/k6:1.8.1"
DEFAULT_PROMETHEUS_URL = "http://kube-prometheus-stack-prometheus.monitoring.svc:9090"
DEFAULT_TICK_SECONDS = 1.0


def _seconds(text: str) -> float:
    """A duration longer than 0s, in seconds."""
    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        raise ValueError(f"{text!r} is not a duration (e.g. 90s, 5m, 2h): {exc}") from None
    if seconds <= 0:
        raise ValueError(f"{text!r} must be longer than 0s")
    return seconds


def _more_than_zero(parse: Callable[[str], float]) -> Callable[[str], float]:
    def parse_limit(text: str) -> float:
        try:
            value = parse(text)
        except ValueError as exc:
            raise ValueError(f"{text!r}: {exc}") from None
        if value <= 0:
            raise ValueError(f"{text!r} must be more than 0")
        return value
    return parse_limit


def _url(text: str) -> str:
    url = text.rstrip("/")
    if url and not url.startswith(("http://", "https://")):
        raise ValueError(f"{url!r} is not an http:// or https:// URL")
    return url


def _names(text: str) -> tuple[str, ...]:
    """A comma-separated list ("" = none)."""
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _json(text: str, kind: type, example: str) -> Any:
    if not text:
        return kind()
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{text!r} is not JSON ({exc}); e.g. {example}") from None
    if not isinstance(value, kind):
        raise ValueError(f"{text!r} is not a JSON {kind.__name__}; e.g. {example}")
    return value


def _names_per_namespace(text: str) -> dict[str, tuple[str, ...]]:
    example = '{"team-a": ["k6-hosts"]}'
    value = _json(text, dict, example)
    if not all(isinstance(v, list) and all(isinstance(x, str) and x for x in v) for v in value.values()):
        raise ValueError(f"each namespace maps to a list of names; e.g. {example}")
    return {namespace: tuple(names) for namespace, names in value.items()}


def _node_selector(text: str) -> dict[str, tuple[str, ...]]:
    example = '{"pool": ["load"]}'
    value = _json(text, dict, example)
    if not all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in value.values()):
        raise ValueError(f"each label maps to a list of the values allowed; e.g. {example}")
    return {label: tuple(values) for label, values in value.items()}


def _tolerations(text: str) -> tuple[dict[str, Any], ...]:
    example = '[{"key": "load", "operator": "Exists", "effect": "NoSchedule"}]'
    value = _json(text, list, example)
    if not all(isinstance(t, dict) for t in value):
        raise ValueError(f"a list of tolerations as in a pod spec; e.g. {example}")
    return tuple(value)


def _flag(text: str) -> bool:
    text = text.lower()
    if text not in ("true", "false"):
        raise ValueError(f"{text!r} is not true or false")
    return text == "true"


def _duration(seconds: float) -> str:
    """A default number of seconds as its variable is written (7200s)."""
    return f"{seconds:g}s"


def gateway_url_in(namespace: str) -> str:
    """The gateway's Service in the system's namespace, as runner pods reach it."""
    return f"http://gateway.{namespace}.svc:8080"


def registry_url_in(namespace: str) -> str:
    """The registry's Service in the system's namespace, as the operator and runners reach it."""
    return f"http://registry.{namespace}.svc:8081"


def tick_seconds_from_env(env: dict[str, str] | None = None) -> float:
    """How often the timer advances each LoadTest; kopf needs it when the handlers are registered."""
    return read(os.environ if env is None else env, "ELVES_TICK_SECONDS", f"{DEFAULT_TICK_SECONDS}s", _seconds)


@dataclass(frozen=True)
class OperatorSettings:
    # Namespace of the system under test: its Deployments, StatefulSets, Secret and the test lock.
    system_namespace: str = SYSTEM_NAMESPACE
    # Whether Elves' own system is installed there (the chart's system.enabled): without it, the
    # harness alone, a LoadTest that names no SystemUnderTest is refused, naming spec.target.
    system_enabled: bool = True
    # The chart's Secret holding `jwt-secret`, the key the k6 tokens are signed with.
    secret_name: str = "elves"
    # The gateway as k6 runner pods reach it (ELVES_BASE_URL of the scripts).
    gateway_url: str = gateway_url_in(SYSTEM_NAMESPACE)
    # The registry as the operator and the runners reach it (the ledger; registry-mix calls it).
    registry_url: str = registry_url_in(SYSTEM_NAMESPACE)
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
    # Namespaces whose LoadTests may run (the chart's watchNamespaces, or loadTestNamespaces and
    # its own); () = any, for an operator run outside the chart. Checked before anything changes.
    loadtest_namespaces: tuple[str, ...] = ()
    # Namespaces where a LoadTest's faults may act on its SystemUnderTest's workloads (another
    # system's: delete a pod, scale, restart); () = none. The chart's operator.targetNamespaces,
    # which also grants the rights there.
    target_namespaces: tuple[str, ...] = ()
    # The Secrets a SystemUnderTest's SQL may take its database URL from, per namespace, per purpose
    # (the persisted count, the reset) and per SystemUnderTest; none by default. The chart's
    # operator.sqlSecrets, which also grants get on exactly these; a test whose SystemUnderTest
    # names another is refused before it starts (elves.k8s.sql_secrets).
    sql_secrets: SqlSecrets = field(default_factory=SqlSecrets)
    # What spec.runner may ask for (the chart's operator.runner): Secrets for envFromSecrets,
    # node labels and values, tolerations, affinity. Nothing unless the chart allows it.
    runner_rules: RunnerRules = field(default_factory=RunnerRules)
    # What a run's KEDA ScaledObject needs from the chart (rendered only where KEDA's API is
    # served): the TriggerAuthentication with KEDA's read-only RabbitMQ user and the AMQP address.
    # Unset: a LoadTest asking for KEDA is refused, saying what to install.
    keda: Keda = field(default_factory=Keda)

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> "OperatorSettings":
        env = dict(os.environ if env is None else env)
        if env.get("ELVES_LEDGER_SECRETS"):
            raise ValueError("ELVES_LEDGER_SECRETS (the chart's operator.ledgerSecrets) is replaced by ELVES_SQL_SECRETS"
                             f" (the chart's {SQL_SECRETS_VALUE}): a Secret per purpose (count, reset), each bound to"
                             " the SystemUnderTests that may use it")
        namespace = env.get("ELVES_SYSTEM_NAMESPACE") or SYSTEM_NAMESPACE
        settings = cls(
            system_namespace=namespace,
            system_enabled=read(env, "ELVES_SYSTEM_ENABLED", str(cls.system_enabled).lower(), _flag),
            secret_name=env.get("ELVES_SECRET_NAME") or cls.secret_name,
            gateway_url=read(env, "ELVES_GATEWAY_URL", gateway_url_in(namespace), _url),
            registry_url=read(env, "ELVES_REGISTRY_URL", registry_url_in(namespace), _url),
            prometheus_url=read(env, "ELVES_PROMETHEUS_URL", DEFAULT_PROMETHEUS_URL, _url),
            grafana_url=read(env, "ELVES_GRAFANA_URL", "", _url),
            grafana_token=env.get("ELVES_GRAFANA_TOKEN", ""),
            grafana_user=env.get("ELVES_GRAFANA_USER", ""),
            grafana_password=env.get("ELVES_GRAFANA_PASSWORD", ""),
            reports_kept=read(env, "ELVES_REPORTS_KEPT", str(cls.reports_kept), count),
            k6_image=env.get("ELVES_K6_IMAGE") or DEFAULT_K6_IMAGE,
            k6_binary=env.get("ELVES_K6") or cls.k6_binary,
            tick_seconds=tick_seconds_from_env(env),
            lock_timeout_seconds=read(env, "ELVES_LOCK_TIMEOUT", _duration(cls.lock_timeout_seconds), _seconds),
            system_ready_timeout_seconds=read(env, "ELVES_SYSTEM_READY_TIMEOUT", _duration(cls.system_ready_timeout_seconds),
                                              _seconds),
            load_start_timeout_seconds=read(env, "ELVES_LOAD_START_TIMEOUT", _duration(cls.load_start_timeout_seconds),
                                            _seconds),
            unschedulable_grace_seconds=read(env, "ELVES_UNSCHEDULABLE_GRACE", _duration(cls.unschedulable_grace_seconds),
                                             _seconds),
            http_timeout_seconds=read(env, "ELVES_HTTP_TIMEOUT", _duration(cls.http_timeout_seconds), _seconds),
            max_replicas=int(read(env, "ELVES_MAX_REPLICAS", str(cls.max_replicas), _more_than_zero(int))),
            max_memory_bytes=int(read(env, "ELVES_MAX_MEMORY", str(cls.max_memory_bytes), _more_than_zero(parse_memory))),
            loadtest_namespaces=read(env, "ELVES_LOADTEST_NAMESPACES", "", _names),
            target_namespaces=read(env, "ELVES_TARGET_NAMESPACES", "", _names),
            sql_secrets=read(env, "ELVES_SQL_SECRETS", "", lambda text: SqlSecrets.of(_json(text, dict, SQL_EXAMPLE))),
            runner_rules=RunnerRules(env_secrets=read(env, "ELVES_RUNNER_ENV_SECRETS", "", _names_per_namespace),
                                     node_selector=read(env, "ELVES_RUNNER_NODE_SELECTOR", "", _node_selector),
                                     tolerations=read(env, "ELVES_RUNNER_TOLERATIONS", "", _tolerations),
                                     affinity=read(env, "ELVES_RUNNER_AFFINITY", "false", _flag)),
            run_credential_max_seconds=max_seconds_from_env(env),
            keda=Keda(trigger_authentication=read(env, "ELVES_KEDA_TRIGGER_AUTHENTICATION", "", str.strip),
                      rabbitmq_host=read(env, "ELVES_KEDA_RABBITMQ_HOST", "", str.strip)),
        )
        if problems := settings.namespace_problems():
            raise ValueError("; ".join(problems))
        return settings

    def namespace_problems(self) -> list[str]:
        """Each namespace list that names kube-* or (where it grants power there) the release
        namespace, with its variable and chart value (elves.k8s.namespace_guard)."""
        lists = [("ELVES_LOADTEST_NAMESPACES (the chart's operator.watchNamespaces or loadTestNamespaces)",
                  self.loadtest_namespaces, True),
                 ("ELVES_TARGET_NAMESPACES (the chart's operator.targetNamespaces)", self.target_namespaces, False),
                 (f"ELVES_SQL_SECRETS (the chart's {SQL_SECRETS_VALUE})", self.sql_secrets.namespaces(), False),
                 ("ELVES_RUNNER_ENV_SECRETS (the chart's operator.runner.envFromSecrets)",
                  tuple(self.runner_rules.env_secrets), False)]
        return [problem for value, namespaces, release_allowed in lists
                for problem in namespace_problems(value, namespaces, self.system_namespace, release_allowed)]

    def policy(self) -> Policy:
        """What a LoadTest may ask of this cluster, checked before it changes anything."""
        return Policy(namespaces=self.loadtest_namespaces, caps=Caps(self.max_replicas, self.max_memory_bytes),
                      runner=self.runner_rules, keda=self.keda, system=self.system_enabled)

    def timeouts(self) -> Timeouts:
        """The phase machine's deadlines, with the cluster's longer waits."""
        return Timeouts(lock=self.lock_timeout_seconds, system_ready=self.system_ready_timeout_seconds,
                        load_start=self.load_start_timeout_seconds, run_credential_max=self.run_credential_max_seconds)
