"""What a LoadTest may ask of a cluster: every rule that authorises a test, in one place.

Creating a LoadTest must not grant more than the chart's values allow: its namespace must be
one the operator runs tests in (else anyone who may create a LoadTest anywhere could reset the
shared database), its sizes within the caps, and its runner pods may take environment only
from Secrets the chart names and land only on nodes the chart allows. The driver checks all
of it before the phase machine takes the system, so a refused test has changed nothing.

The Secrets are names per namespace in the chart's values, not a label on the Secret: checking a
label would need the operator to read every Secret in every LoadTest namespace; and a bare name
would hold in every namespace, so another team's Secret of that name would be open too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from elves.engine.models.spec import LoadTestSpec, Runner
from elves.engine.planning.plan import expand_sweep
from elves.k8s.autoscalers import SCALED_OBJECT, Keda, kind_of
from elves.k8s.faults import Caps, cluster_problems
from elves.k8s.target import FIELD as TARGET_FIELD

TOLERATION_FIELDS = ("key", "operator", "value", "effect")


@dataclass(frozen=True)
class RunnerRules:
    """What spec.runner may ask for (the chart's operator.runner)."""

    # namespace -> names of the Secrets envFromSecrets may take there: a name holds only in its own
    # namespace, so a Secret of that name elsewhere (another team's) stays out of the runners' reach.
    env_secrets: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    node_selector: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # label -> values allowed
    tolerations: tuple[Mapping[str, Any], ...] = ()  # each toleration a runner may carry
    affinity: bool = False  # whether spec.runner.affinity is allowed at all


@dataclass(frozen=True)
class Policy:
    namespaces: tuple[str, ...]  # where LoadTests may run; () = anywhere
    caps: Caps
    runner: RunnerRules = field(default_factory=RunnerRules)
    keda: Keda = field(default_factory=Keda)  # what a run's ScaledObject needs from the chart
    system: bool = True  # whether Elves' own system is installed (the chart's system.enabled)


def refusals(namespace: str, spec: LoadTestSpec, policy: Policy,
             keda_served: Callable[[], bool] = lambda: False) -> list[str]:
    """Why this cluster will not run the test, each naming its field (empty: it may run).
    `keda_served` asks the API server whether it serves KEDA's API (only when a run asks for KEDA)."""
    if policy.namespaces and namespace not in policy.namespaces:
        # Nothing else matters, and nothing else is said of a spec this operator will not look at.
        return [f"metadata.namespace: LoadTests in namespace {namespace} are not run by this operator; it runs "
                f"them in {', '.join(policy.namespaces)} (the chart's operator.watchNamespaces, or "
                "operator.loadTestNamespaces and its own namespace)"]
    if not policy.system and spec.target is None:
        # Nothing else is said either: the test has no system to be judged against.
        return [f"{TARGET_FIELD}: this release installs the harness alone, without Elves' own system (the chart's"
                f" system.enabled: false), so a LoadTest names the SystemUnderTest it judges (kubectl -n {namespace}"
                " get systemundertests; docs/own-system.md)"]
    problems = cluster_problems(spec, policy.caps)
    problems += keda_problems(spec, policy.keda, keda_served)
    if spec.runner is not None:
        problems += runner_problems(spec.runner, policy.runner, namespace)
    return problems


def keda_problems(spec: LoadTestSpec, keda: Keda, keda_served: Callable[[], bool]) -> list[str]:
    """A run that asks for KEDA on a cluster without it, or under a chart installed before it, is
    refused before anything changes, saying what to install (not a failed create halfway)."""
    wanted = sorted({d for point in expand_sweep(spec) for d in point.system.autoscaled()
                     if kind_of(d) == SCALED_OBJECT})
    if not wanted:
        return []
    if not keda_served():
        why = (f"this cluster does not serve KEDA's API ({SCALED_OBJECT.api_version}): install KEDA (`helm upgrade "
               "--install keda keda --repo https://kedacore.github.io/charts -n keda --create-namespace`), then "
               "`helm upgrade` the elves release so it renders KEDA's "
               "TriggerAuthentication, or use mode: fixed")
    elif not (keda.trigger_authentication and keda.rabbitmq_host):
        why = ("the elves release was installed without KEDA's TriggerAuthentication (the operator has no "
               "ELVES_KEDA_TRIGGER_AUTHENTICATION: the chart renders it only where KEDA's API is served and with "
               "its own RabbitMQ, rabbitmq.enabled): `helm upgrade` the release now that KEDA is installed")
    else:
        return []
    return [f"spec.system.autoscaling.{d}.mode: keda needs KEDA, and {why}" for d in wanted]


def runner_problems(runner: Runner, rules: RunnerRules, namespace: str) -> list[str]:
    problems = []
    allowed_here = rules.env_secrets.get(namespace, ())
    for index, secret in enumerate(runner.env_from_secrets or []):
        if secret not in allowed_here:
            problems.append(f"spec.runner.envFromSecrets[{index}]: Secret {secret} is not one the runners may take "
                            f"their environment from in namespace {namespace} "
                            f"({_allowed(f'envFromSecrets.{namespace}', allowed_here)})")
    for label, value in (runner.node_selector or {}).items():
        if value not in rules.node_selector.get(label, ()):
            allowed = [f"{k}={'|'.join(v)}" for k, v in sorted(rules.node_selector.items())]
            problems.append(f"spec.runner.nodeSelector.{label}: {label}={value} is not a node label the runners may "
                            f"ask for ({_allowed('nodeSelector', allowed)})")
    allowed_tolerations = [_toleration(t) for t in rules.tolerations]
    for index, toleration in enumerate(runner.tolerations or []):
        if _toleration(toleration) not in allowed_tolerations:
            problems.append(f"spec.runner.tolerations[{index}]: {_toleration(toleration)} is not a toleration the "
                            f"runners may carry ({_allowed('tolerations', [str(t) for t in allowed_tolerations])})")
    if runner.affinity and not rules.affinity:
        problems.append("spec.runner.affinity: this cluster does not let LoadTests choose their runners' nodes by "
                        "affinity (the chart's operator.runner.affinity is false)")
    return problems


def _toleration(toleration: Mapping[str, Any]) -> dict[str, str]:
    """A toleration as compared: its key, operator, value and effect (how long it tolerates a
    NoExecute taint does not widen where it lands)."""
    toleration = {"operator": "Equal", **toleration}  # the API's default
    return {k: str(toleration[k]) for k in TOLERATION_FIELDS if toleration.get(k) not in (None, "")}


def _allowed(value: str, names: list[str] | tuple[str, ...]) -> str:
    """What the chart's value allows, in words (no semicolon: refusals are joined with them)."""
    return f"the chart's operator.runner.{value} allows {', '.join(names) if names else 'none'}"
