"""Tier 4: a throwaway single-node cluster with real pods (tools/e2e/cluster.sh).

The session fixture brings the cluster up once and takes it down at the end. When the
machine cannot run it (not root, packages or Kubernetes binaries missing), the tier is
skipped with the reason, except under CI=true, where a missing prerequisite fails.
Set ELVES_E2E_KEEP=1 to leave the cluster running after the tests, to look at it.

Tests marked `autoscaling` (test_autoscaling.py: KEDA and metrics-server, `make
test-autoscaling`) run only when asked: `pytest -m autoscaling tests/e2e`. Without an -m that
names the marker they are deselected, so `make test-e2e` (and `make test`) runs what it ran
before; asked for beside the others, they run last, after test_user_path.py's cleanup.

The Elves release the user's way is made once per session, in two steps. `harness`: the harness
alone, as `./deployments.sh --harness-only` installs it (the chart's system.enabled: false) by a
plain `helm install`, then the add-ons NOTES.txt asks for and `helm upgrade`: test_foreign_system.py
judges another system with it, none of Elves' services, broker or database beside it.
`installed`: the same release upgraded to system.enabled: true (an upgrade, not a reinstall), on
which test_user_path.py goes on and ends with its cleanup.
"""

from __future__ import annotations

import os
import sys
from functools import partial

import pytest
import yaml
from polling import wait_for
from prerequisites import require

from kube import REPO, Cluster, cluster_sh, missing_prerequisites, run, running_cluster
from release import (IMAGES, INSTALL_TIMEOUT_S, NAMESPACE, PROMETHEUS_URL, RELEASE, e2e_values, elves_system_objects,
                     helm, promql, timed_step)

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
def harness(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Cluster:
    """The harness alone (system.enabled: false, what `./deployments.sh --harness-only` sets) by a
    plain `helm install` on a bare cluster: no prometheus-operator, no k6-operator. NOTES.txt must
    say it is the harness alone and name both add-ons and how to add them; then the add-ons a real
    cluster would have are installed and the release upgraded, as NOTES.txt says."""
    timed = partial(timed_step, "setup")
    with timed("images (built when not cached), imported"):
        cluster.load_images(*IMAGES)
    values = tmp_path_factory.mktemp("e2e") / "values.yaml"
    values.write_text(yaml.safe_dump(e2e_values(cluster)))
    chart = str(REPO / "charts" / "elves")
    with timed("the harness alone: helm install (system.enabled: false), until rolled out"):
        notes = helm(cluster, "install", RELEASE, chart, "-n", NAMESPACE, "--create-namespace", "-f", str(values),
                     "--set", f"operator.prometheusUrl={PROMETHEUS_URL}", "--set", "system.enabled=false",
                     "--wait", "--timeout", "15m")
    assert "the harness alone, is installed" in notes, notes
    assert "MISSING from this cluster" in notes, notes
    assert "k6-operator (API k6.io/v1alpha1" in notes and "helm upgrade --install k6-operator" in notes, notes
    assert "prometheus-operator (API monitoring.coreos.com/v1)" in notes, notes

    with timed("add-ons: monitoring and k6-operator, until their APIs are Available"):
        run([sys.executable, str(REPO / "tools" / "e2e" / "addons.py"), "apply"],
            env={"KUBECONFIG": cluster.kubeconfig}, timeout=INSTALL_TIMEOUT_S)
    with timed("the harness upgraded as NOTES.txt says, until rolled out"):
        notes = helm(cluster, "upgrade", RELEASE, chart, "-n", NAMESPACE, "--reuse-values", "--wait", "--timeout", "15m")
    assert "MISSING from this cluster" not in notes, notes
    # Alone, the harness scrapes none of Elves' queues or services: it has none.
    assert "kind: ServiceMonitor" not in helm(cluster, "get", "manifest", RELEASE, "-n", NAMESPACE)
    assert elves_system_objects(cluster) == []
    return cluster


@pytest.fixture(scope="session")
def installed(harness: Cluster) -> Cluster:
    """The harness's release upgraded to Elves' own system (system.enabled: true), as a team that
    began with the harness alone would add it: one `helm upgrade --reuse-values`, not a reinstall.
    A team's namespaces the harness served (test_foreign_system.py's, deleted after it) are
    given up in the same upgrade: the chart would otherwise write its Roles into them."""
    cluster = harness
    chart = str(REPO / "charts" / "elves")
    with timed_step("setup", "Elves' own system added: helm upgrade (system.enabled: true), until rolled out"):
        notes = helm(cluster, "upgrade", RELEASE, chart, "-n", NAMESPACE, "--reuse-values",
                     "--set", "system.enabled=true", "--set-json", "operator.loadTestNamespaces=[]",
                     "--set-json", "operator.targetNamespaces=[]", "--wait", "--timeout", "15m")
        assert "the harness alone" not in notes and "MISSING from this cluster" not in notes, notes
        assert "kind: ServiceMonitor" in helm(cluster, "get", "manifest", RELEASE, "-n", NAMESPACE)
        # The new ServiceMonitors reach Prometheus through prometheus-operator and a config
        # reload: a LoadTest's drain reads queue depth, so wait until Elves' RabbitMQ is scraped.
        wait_for(lambda: promql(cluster, f'rabbitmq_detailed_queue_messages{{namespace="{NAMESPACE}"}}'),
                 "Prometheus to scrape Elves' RabbitMQ", 300, interval=5)
    return cluster
