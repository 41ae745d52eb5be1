"""Tier 4: a throwaway single-node cluster with real pods (tools/e2e/cluster.sh).

The session fixture brings the cluster up once and takes it down at the end. When the
machine cannot run it (not root, packages or Kubernetes binaries missing), the tier is
skipped with the reason, except under CI=true, where a missing prerequisite fails.
Set ELVES_E2E_KEEP=1 to leave the cluster running after the tests, to look at it.

Tests marked `autoscaling` (test_autoscaling.py: KEDA and metrics-server, `make
test-autoscaling`) run only when asked: `pytest -m autoscaling tests/e2e`. Without an -m that
names the marker they are deselected, so `make test-e2e` (and `make test`) runs what it ran
before; asked for beside the others, they run last, after test_user_path.py's cleanup.

The Elves release the user's way (`installed`: a plain `helm install`, then the add-ons NOTES.txt
asks for and `helm upgrade`) is made once per session: test_foreign_system.py judges another
system with it, then test_user_path.py goes on with it and ends with its cleanup.
"""

from __future__ import annotations

import os
import sys

import pytest
import yaml
from polling import wait_for
from prerequisites import require

from kube import REPO, Cluster, cluster_sh, missing_prerequisites, run, running_cluster
from release import IMAGES, INSTALL_TIMEOUT_S, NAMESPACE, PROMETHEUS_URL, RELEASE, e2e_values, helm, promql

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
        yield running_cluster()
    finally:
        if os.environ.get("ELVES_E2E_KEEP") != "1":
            cluster_sh("down", timeout=DOWN_TIMEOUT_S)


@pytest.fixture(scope="session")
def installed(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Cluster:
    """A plain `helm install` on a bare cluster: no prometheus-operator, no
    k6-operator. NOTES.txt must name both and how to add them; then the add-ons a real
    cluster would have are installed and the release upgraded, as NOTES.txt says."""
    cluster.load_images(*IMAGES)
    values = tmp_path_factory.mktemp("e2e") / "values.yaml"
    values.write_text(yaml.safe_dump(e2e_values(cluster)))
    chart = str(REPO / "charts" / "elves")
    notes = helm(cluster, "install", RELEASE, chart, "-n", NAMESPACE, "--create-namespace", "-f", str(values),
                 "--set", f"operator.prometheusUrl={PROMETHEUS_URL}", "--wait", "--timeout", "15m")
    assert "MISSING from this cluster" in notes, notes
    assert "k6-operator (API k6.io/v1alpha1" in notes and "helm upgrade --install k6-operator" in notes, notes
    assert "prometheus-operator (API monitoring.coreos.com/v1)" in notes, notes
    assert "kind: ServiceMonitor" not in helm(cluster, "get", "manifest", RELEASE, "-n", NAMESPACE)

    run([sys.executable, str(REPO / "tools" / "e2e" / "addons.py"), "apply"],
        env={"KUBECONFIG": cluster.kubeconfig}, timeout=INSTALL_TIMEOUT_S)
    notes = helm(cluster, "upgrade", RELEASE, chart, "-n", NAMESPACE, "--reuse-values", "--wait", "--timeout", "15m")
    assert "MISSING from this cluster" not in notes, notes
    assert "kind: ServiceMonitor" in helm(cluster, "get", "manifest", RELEASE, "-n", NAMESPACE)
    # The new ServiceMonitors reach Prometheus through prometheus-operator and a config
    # reload: a LoadTest's drain reads queue depth, so wait until RabbitMQ is scraped.
    wait_for(lambda: promql(cluster, "rabbitmq_detailed_queue_messages"), "Prometheus to scrape RabbitMQ", 300,
             interval=5)
    return cluster
