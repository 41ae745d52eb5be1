"""The elves chart, rendered with each charts/elves/ci/*.yaml, passes a server-side dry run
on a real kube-apiserver that has the prometheus-operator, k6-operator and KEDA CRDs: every
object is one the API server would store (schemas, CRD kinds, RBAC, admission), and every
pod template meets the `restricted` Pod Security Standard.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml
from prerequisites import require

from . import control_plane as cp

CHART = cp.REPO / "charts" / "elves"
CI_VALUES = sorted((CHART / "ci").glob("*.yaml"))
# The API groups a cluster with kube-prometheus-stack, k6-operator and KEDA offers, so templates
# that check .Capabilities render what they would render there (all-features-values.yaml's
# autoscalers among them).
CLUSTER_API_VERSIONS = ("monitoring.coreos.com/v1", "k6.io/v1alpha1", "keda.sh/v1alpha1")


def render(values: Path, namespace: str) -> str:
    helm = cp.helm_binary()
    require(helm, "helm is missing (tools/which-helm.sh found none): run tools/install-helm.sh")
    api_versions = [arg for v in CLUSTER_API_VERSIONS for arg in ("--api-versions", v)]
    kube_version = cp.versions()["KUBERNETES_VERSION"]
    result = subprocess.run(
        [helm, "template", "elves", str(CHART), "--namespace", namespace,
         "--kube-version", kube_version, *api_versions, "-f", str(values)],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"helm template with {values.name} failed: {result.stderr}"
    return result.stdout


def prepare_namespace(plane: cp.ControlPlane, namespace: str, manifests: str) -> None:
    """What a real install has before its pods are admitted: the namespace (enforcing the
    restricted Pod Security Standard, as the chart promises), its `default` ServiceAccount
    (kube-controller-manager would make it; this tier has none) and the chart's own
    ServiceAccounts (Helm creates those before the workloads)."""
    plane.kubectl("create", "namespace", namespace)
    plane.kubectl("label", "namespace", namespace, "pod-security.kubernetes.io/enforce=restricted",
                  "pod-security.kubernetes.io/warn=restricted")
    plane.kubectl("create", "serviceaccount", "default", "-n", namespace)
    accounts = [doc for doc in yaml.safe_load_all(manifests)
                if doc and doc.get("kind") == "ServiceAccount"]
    if accounts:
        plane.kubectl("apply", "-n", namespace, "-f", "-",
                      stdin=yaml.safe_dump_all(accounts))


@pytest.fixture(scope="module")
def chart_crds(control_plane: cp.ControlPlane) -> None:
    """The chart's own CRDs (Helm installs crds/ before anything else)."""
    crds = CHART / "crds"
    if crds.is_dir() and any(crds.glob("*.yaml")):
        control_plane.install_crds(crds)


def test_there_are_ci_value_sets() -> None:
    assert CI_VALUES, "charts/elves/ci/ has no values file"


@pytest.mark.parametrize("values", CI_VALUES, ids=[v.stem for v in CI_VALUES])
def test_the_rendered_chart_passes_a_server_side_dry_run(
        control_plane: cp.ControlPlane, chart_crds: None, values: Path) -> None:
    namespace = "chart-" + re.sub(r"[^a-z0-9-]", "-", values.stem.lower())[:50]
    manifests = render(values, namespace)
    prepare_namespace(control_plane, namespace, manifests)

    result = control_plane.kubectl("apply", "--dry-run=server", "-n", namespace, "-f", "-",
                                   stdin=manifests, check=False)

    assert result.returncode == 0, f"rejected with {values.name}: {result.stderr}"
    assert "PodSecurity" not in result.stderr, \
        f"a pod template breaks the restricted standard with {values.name}: {result.stderr}"
    applied = [line for line in result.stdout.splitlines() if line.endswith("(server dry run)")]
    rendered = [doc for doc in yaml.safe_load_all(manifests) if doc]
    assert len(applied) == len(rendered), result.stdout
    if values.stem == "all-features-values":  # the autoscalers, checked against KEDA's own CRDs
        assert {"ScaledObject", "TriggerAuthentication", "HorizontalPodAutoscaler"} <= {d["kind"] for d in rendered}
