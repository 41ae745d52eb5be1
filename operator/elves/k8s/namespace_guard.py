"""Namespaces no chart value may hand the operator power in: Kubernetes' own (`kube-*`: kube-system
runs the control plane's pods and holds its credentials) and, for the lists that grant power over
what lives there, the release namespace (the database and broker, their superuser's password, the
operator itself). A SystemUnderTest's author in such a namespace could otherwise have any pod
deleted, any workload scaled or a chart Secret read.

The values schema refuses `kube-*` and the chart refuses the release namespace when it renders
(charts/elves/templates/_validate.tpl); the operator checks again at start, naming the value, for an
operator configured by hand or a chart rendered without its schema.
"""

from __future__ import annotations

from collections.abc import Iterable

KUBE_PREFIX = "kube-"


def namespace_problems(value: str, namespaces: Iterable[str], release_namespace: str,
                       release_allowed: bool = False) -> list[str]:
    """What is wrong with the namespaces of the chart value `value` (e.g. operator.targetNamespaces):
    each `kube-*` one, and the release namespace unless `release_allowed` (the namespaces whose
    LoadTests the operator runs include its own, where the built-in system is tested)."""
    problems = []
    for namespace in namespaces:
        if namespace.startswith(KUBE_PREFIX):
            problems.append(f"{value}: {namespace} is one of Kubernetes' own namespaces (kube-*), where the operator"
                            " is never given power")
        elif namespace == release_namespace and not release_allowed:
            problems.append(f"{value}: {namespace} is the release namespace (its database, broker, their"
                            " passwords and the operator), where this value would give the operator power a"
                            " SystemUnderTest's author could use")
    return problems
