"""Tier 4: a throwaway single-node cluster with real pods (tools/e2e/cluster.sh).

The session fixture brings the cluster up once and takes it down at the end. When the
machine cannot run it (not root, packages or Kubernetes binaries missing), the tier is
skipped with the reason, except under CI=true, where a missing prerequisite fails.
Set ELVES_E2E_KEEP=1 to leave the cluster running after the tests, to look at it.

Tests marked `autoscaling` (test_autoscaling.py: KEDA and metrics-server, `make
test-autoscaling`) run only when asked: `pytest -m autoscaling tests/e2e`. Without an -m that
names the marker they are deselected, so `make test-e2e` (and `make test`) runs what it ran
before; asked for beside the others, they run last, after test_user_path.py's cleanup.
"""

from __future__ import annotations

import os

import pytest
from prerequisites import require

from kube import Cluster, cluster_sh, missing_prerequisites

UP_TIMEOUT_S = 1800  # a cold machine builds CoreDNS and the pause image before `up` returns
DOWN_TIMEOUT_S = 300


OPT_IN = "autoscaling"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    opt_in = [item for item in items if item.get_closest_marker(OPT_IN)]
    if not opt_in:
        return
    others = [item for item in items if not item.get_closest_marker(OPT_IN)]
    if OPT_IN in (config.option.markexpr or ""):
        items[:] = others + opt_in
    else:
        config.hook.pytest_deselected(items=opt_in)
        items[:] = others


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
