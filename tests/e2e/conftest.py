"""Tier 4: a throwaway single-node cluster with real pods (tools/e2e/cluster.sh).

The session fixture brings the cluster up once and takes it down at the end. When the
machine cannot run it (not root, packages or Kubernetes binaries missing), the tier is
skipped with the reason, except under CI=true, where a missing prerequisite fails.
Set ELVES_E2E_KEEP=1 to leave the cluster running after the tests, to look at it.
"""

from __future__ import annotations

import os

import pytest
from prerequisites import require

from kube import Cluster, cluster_sh, missing_prerequisites

UP_TIMEOUT_S = 1800  # a cold machine builds CoreDNS and the pause image before `up` returns
DOWN_TIMEOUT_S = 300


@pytest.fixture(scope="session")
def cluster() -> Cluster:
    missing = missing_prerequisites()
    require(not missing, "the single-node cluster needs: " + "; ".join(missing))
    cluster_sh("up", timeout=UP_TIMEOUT_S)
    try:
        env = dict(
            line.removeprefix("export ").split("=", 1)
            for line in cluster_sh("env", timeout=30).splitlines()
            if line.startswith("export ")
        )
        yield Cluster(kubeconfig=env["KUBECONFIG"], env=env)
    finally:
        if os.environ.get("ELVES_E2E_KEEP") != "1":
            cluster_sh("down", timeout=DOWN_TIMEOUT_S)
