"""kubectl and the cluster harness (tools/e2e/cluster.sh), as the end-to-end tests and
bench/cluster_cases.py use them.

The tests drive the cluster the way a user does, through kubectl; every wait is
kubectl's own `wait` / `rollout status` with a timeout, or a poll with a deadline.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from polling import wait_for

REPO = Path(__file__).resolve().parents[2]
CLUSTER_SH = REPO / "tools" / "e2e" / "cluster.sh"


class CommandFailed(AssertionError):
    """A command the test relied on failed; the message carries its output."""


def run(args: list[str], *, timeout: float, env: dict[str, str] | None = None, stdin: str | None = None) -> str:
    """Runs a command, returns its stdout, raises CommandFailed with its output otherwise."""
    try:
        done = subprocess.run(
            args, input=stdin, capture_output=True, text=True, timeout=timeout,
            env={**os.environ, **(env or {})},
        )
    except subprocess.TimeoutExpired as e:
        raise CommandFailed(f"{' '.join(args)} did not finish within {timeout:.0f} s\n{e.stderr or ''}") from e
    if done.returncode != 0:
        raise CommandFailed(
            f"{' '.join(args)} exited {done.returncode}\n--- stdout\n{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}"
        )
    return done.stdout


def cluster_sh(*args: str, timeout: float) -> str:
    return run([str(CLUSTER_SH), *args], timeout=timeout)


def missing_prerequisites() -> list[str]:
    """What this machine lacks to run the cluster (empty when it can)."""
    out = subprocess.run([str(CLUSTER_SH), "prerequisites"], capture_output=True, text=True, timeout=60)
    missing = [line for line in out.stdout.splitlines() if line.strip()]
    # deploy.sh and cleanup.sh install with it; the tests look at releases with the same one.
    helm = subprocess.run([str(REPO / "tools" / "which-helm.sh")], capture_output=True, text=True, timeout=30)
    return missing + ([] if helm.returncode == 0 else ["helm (tools/install-helm.sh)"])


@dataclass
class Cluster:
    """A running throwaway cluster: its kubeconfig and the containerd it loads images into."""

    kubeconfig: str
    env: dict[str, str]

    def kubectl(self, *args: str, timeout: float = 60, stdin: str | None = None) -> str:
        return run(["kubectl", "--kubeconfig", self.kubeconfig, *args], timeout=timeout, stdin=stdin)

    def kubectl_json(self, *args: str, timeout: float = 60) -> dict:
        return json.loads(self.kubectl(*args, "-o", "json", timeout=timeout))

    def apply(self, manifest: str, namespace: str | None = None) -> None:
        ns = ["-n", namespace] if namespace else []
        self.kubectl("apply", *ns, "-f", "-", stdin=manifest)

    def load_images(self, *names: str, timeout: float = 1800) -> None:
        """Builds (cached) and imports images by their tools/e2e/build-images.sh names."""
        cluster_sh("images", *names, timeout=timeout)

    def image(self, name: str) -> str:
        """The tag of an image built by tools/e2e/build-images.sh."""
        out = run([str(REPO / "tools" / "e2e" / "build-images.sh"), "--list", name], timeout=30)
        return out.split()[1]

    def wait_pod_phase(self, namespace: str, pod: str, phases: set[str], timeout: float) -> str:
        """Polls a pod until its phase is one of `phases`; returns the phase."""
        def phase() -> str:
            now = self.kubectl("get", "pod", pod, "-n", namespace, "-o", "jsonpath={.status.phase}")
            return now if now in phases else ""

        try:
            return wait_for(phase, f"pod {namespace}/{pod} to be {' or '.join(sorted(phases))}", timeout, interval=0.5)
        except AssertionError as error:
            raise AssertionError(f"{error}\n{self.kubectl('describe', 'pod', pod, '-n', namespace)}") from None


def running_cluster() -> Cluster:
    """The cluster `cluster.sh up` brought up, from the variables `cluster.sh env` prints."""
    env = dict(line.removeprefix("export ").split("=", 1)
               for line in cluster_sh("env", timeout=30).splitlines() if line.startswith("export "))
    return Cluster(kubeconfig=env["KUBECONFIG"], env=env)
