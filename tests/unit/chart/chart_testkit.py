"""What the chart's tier-1 tests share: `helm template` of charts/elves as objects, and
lookups into them. The `helm` fixture is in conftest.py.
"""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

import pytest
import yaml


REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "charts" / "elves"
CI_VALUES = sorted((CHART / "ci").glob("*.yaml"))
DASHBOARDS = sorted((CHART / "dashboards").glob("*.json"))
NAMESPACE = "elves"
SERVICES = ("gateway", "registry", "ingestor")
# The APIs of kube-prometheus-stack (ServiceMonitor, PrometheusRule) and k6-operator (TestRun):
# the chart renders their objects, and NOTES.txt stays quiet about them, only where they exist.
MONITORING_API = "monitoring.coreos.com/v1"
K6_API = "k6.io/v1alpha1"
# The chart's own CRDs, which `helm install` applies before it renders the templates.
SUT_API = "elves.dev/v1alpha1/SystemUnderTest"
CLUSTER_API_VERSIONS = (MONITORING_API, K6_API, SUT_API)
POD_KINDS = {"Deployment", "StatefulSet", "DaemonSet", "Job", "Pod"}
# An operator serving two namespaces, with kopf peering (objects outside the release
# namespace, so not part of a ci value set).
SCOPED_OPERATOR = ("operator.watchNamespaces={elves,load-tests}", "operator.peering=elves")


@functools.cache
def helm_path() -> str | None:
    """The helm tools/which-helm.sh names: the one lookup the scripts and every tier share."""
    result = subprocess.run([str(REPO / "tools" / "which-helm.sh")], capture_output=True, text=True, timeout=30)
    return result.stdout.strip() if result.returncode == 0 else None


def run_helm(helm: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([helm, *args], capture_output=True, text=True, timeout=120)


def api_version_args(api_versions: tuple[str, ...]) -> list[str]:
    return [arg for version in api_versions for arg in ("--api-versions", version)]


@functools.cache
def render(helm: str, values_file: Path | None = None, *sets: str,
           api_versions: tuple[str, ...] = CLUSTER_API_VERSIONS, namespace: str = NAMESPACE) -> tuple[dict, ...]:
    """`helm template` of the chart (hooks included) into `namespace` as a tuple of objects, on a
    cluster that serves `api_versions` besides the built-in ones (() = a bare cluster)."""
    args = ["template", "elves", str(CHART), "--namespace", namespace, *api_version_args(api_versions)]
    if values_file is not None:
        args += ["--values", str(values_file)]
    for item in sets:
        args += ["--set", item]
    result = run_helm(helm, *args)
    assert result.returncode == 0, f"helm {' '.join(args)} failed:\n{result.stderr}"
    return tuple(doc for doc in yaml.safe_load_all(result.stdout) if doc)


def template_error(helm: str, *sets: str) -> str:
    """The error `helm template` gives for these --set values (the test fails if it renders)."""
    args = ["template", "elves", str(CHART), "--namespace", NAMESPACE]
    for item in sets:
        args += ["--set", item]
    result = run_helm(helm, *args)
    assert result.returncode != 0, f"helm accepted --set {' '.join(sets)}"
    return result.stderr


def of_kind(objects, kind: str) -> list[dict]:
    return [o for o in objects if o["kind"] == kind]


def named(objects, kind: str, name: str) -> dict:
    matches = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(matches) == 1, f"expected one {kind} {name}, found {len(matches)}"
    return matches[0]


def pod_specs(objects):
    """(object, pod spec) for everything that makes pods."""
    for obj in objects:
        if obj["kind"] == "Pod":
            yield obj, obj["spec"]
        elif obj["kind"] in POD_KINDS:
            yield obj, obj["spec"]["template"]["spec"]


def is_hook(obj: dict) -> bool:
    return "helm.sh/hook" in (obj["metadata"].get("annotations") or {})


def env_of(container: dict) -> dict[str, dict]:
    return {e["name"]: e for e in container.get("env", [])}


ci_values = pytest.mark.parametrize("values_file", CI_VALUES, ids=lambda p: p.stem)


def installs_the_system(values_file: Path | None) -> bool:
    """Whether a ci values set installs Elves' own system (system.enabled), or the harness alone."""
    values = yaml.safe_load(values_file.read_text()) if values_file is not None else {}
    return (values.get("system") or {}).get("enabled", True)


def rules_of(objects, kind):
    return [(o["metadata"]["name"], rule) for o in of_kind(objects, kind) for rule in o["rules"]]
