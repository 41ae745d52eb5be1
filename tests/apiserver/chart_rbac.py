"""The operator as the chart installs it, as far as its permissions go: the chart's
ServiceAccount, Roles, ClusterRoles and bindings (`helm template`, operator.yaml) applied to
the session's API server, and a kubeconfig that authenticates as that ServiceAccount (a
TokenRequest token). An operator run with it can do what the chart grants and nothing more,
so a test proves the chart's RBAC is enough, not the admin's."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path
from typing import Any

import yaml
from prerequisites import require

from . import control_plane as cp

CHART = cp.REPO / "charts" / "elves"
RELEASE = "elves"
RBAC_KINDS = {"ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"}


def render_operator(release_namespace: str, values: dict[str, Any], workdir: Path) -> list[dict[str, Any]]:
    """The chart's operator.yaml for `values`, as objects."""
    helm = cp.helm_binary()
    require(helm, "no helm (tools/which-helm.sh): run tools/install-helm.sh")
    values_file = workdir / "operator-values.yaml"
    values_file.write_text(yaml.safe_dump(values))
    result = subprocess.run([helm, "template", RELEASE, str(CHART), "--namespace", release_namespace,
                             "--show-only", "templates/operator.yaml", "-f", str(values_file)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"helm template failed: {result.stderr}"
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def operator_environment(objects: list[dict[str, Any]]) -> dict[str, str]:
    """The plain environment variables the chart gives the operator's container."""
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e["value"] for e in container["env"] if "value" in e}


def install_operator_rbac(plane: cp.ControlPlane, release_namespace: str, values: dict[str, Any],
                          workdir: Path) -> tuple[Path, dict[str, str]]:
    """Apply the chart's RBAC for the operator; (a kubeconfig of its ServiceAccount, the
    environment the chart gives the operator)."""
    objects = render_operator(release_namespace, values, workdir)
    rbac = [o for o in objects if o["kind"] in RBAC_KINDS]
    plane.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(rbac))
    (account,) = [o["metadata"] for o in rbac if o["kind"] == "ServiceAccount"]
    token = plane.kubectl("create", "token", account["name"], "-n", account["namespace"],
                          "--duration=2h").stdout.strip()
    admin = yaml.safe_load(Path(plane.kubeconfig).read_text())
    cluster = admin["clusters"][0]["cluster"]
    ca = cluster.get("certificate-authority-data") or base64.b64encode(
        Path(cluster["certificate-authority"]).read_bytes()).decode()
    kubeconfig = workdir / f"operator-{release_namespace}.kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "operator",
        "clusters": [{"name": "plane", "cluster": {"server": cluster["server"], "certificate-authority-data": ca}}],
        "users": [{"name": "operator", "user": {"token": token}}],
        "contexts": [{"name": "operator", "context": {"cluster": "plane", "user": "operator"}}],
    }))
    return kubeconfig, operator_environment(objects)
