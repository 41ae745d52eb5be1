"""The opt-in autoscaling tier (`make test-autoscaling`, or `pytest -m autoscaling tests/e2e`):
a real KEDA scale-up and scale-down on the test cluster, with nothing lost.

KEDA v2.21.0 (its operator and its external metrics API server) and metrics-server v0.8.0 are
built from their Go modules and installed as aggregated APIs behind cluster.sh's front proxy
(`tools/e2e/addons.py apply --autoscaling`, beside the monitoring and k6-operator); the chart is
installed after them, so it renders the TriggerAuthentication a LoadTest's ScaledObject uses.
Then a spike (loadtests/autoscaling-spike.yaml) with spec.system.autoscaling.ingestor in mode
keda: the LoadTest's status must show the scale-up (a lag) and the scale-down (two replica
changes or more), replica-seconds above what the fixed minimum would have cost over the same
run, the ledger exact while replicas came and went, and the verdict Passed.

`make test-e2e` does not select these (tests/e2e/conftest.py deselects the `autoscaling`
marker unless -m names it): KEDA is the largest Go build of all and a cold `make test` is
already near CI's budget. docs/testing.md has the times.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
import yaml

from kube import REPO, Cluster, run
from ledger_checks import assert_nothing_lost_or_persisted_twice
from polling import wait_for
from release import NAMESPACE, QUEUES, install_with_autoscaling, only_run, run_loadtest, timed_step

pytestmark = pytest.mark.autoscaling

LOADTEST = Path(__file__).parent / "loadtests" / "autoscaling-spike.yaml"
timed = partial(timed_step, "autoscaling tier")


@pytest.fixture(scope="module")
def autoscaled(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """The cluster with KEDA, metrics-server, the monitoring and k6-operator, then the Elves
    release installed after them (so its NOTES name nothing missing)."""
    install_with_autoscaling(cluster, tmp_path_factory.mktemp("autoscaling") / "values.yaml", timed)
    yield cluster
    # Leave the cluster as test_user_path.py expects it, should it run later in the same session.
    run([str(REPO / "tools" / "cluster" / "cleanup.sh")], env={"KUBECONFIG": cluster.kubeconfig}, timeout=600)


def test_metrics_server_and_keda_serve_their_aggregated_apis(autoscaled: Cluster) -> None:
    """Through the API server's front proxy: metrics-server has the pods' CPU from the kubelet
    (reached on loopback, its certificate checked), and KEDA's adapter lists its API."""
    def ingestor_cpu() -> list[str]:
        pods = json.loads(autoscaled.kubectl("get", "--raw", f"/apis/metrics.k8s.io/v1beta1/namespaces/{NAMESPACE}/pods"))
        return [c["usage"]["cpu"] for p in pods["items"] if p["metadata"]["name"].startswith("ingestor-")
                for c in p["containers"] if c["name"] == "ingestor"]

    # metrics-server's first scrape comes one resolution (15 s) after it started.
    usage = wait_for(ingestor_cpu, "metrics-server to report the ingestor's CPU", 120, interval=5, ignore=(AssertionError,))
    print(f"autoscaling tier: metrics.k8s.io has the ingestor's CPU: {usage}")
    external = json.loads(autoscaled.kubectl("get", "--raw", "/apis/external.metrics.k8s.io/v1beta1"))
    assert external["groupVersion"] == "external.metrics.k8s.io/v1beta1", external


def test_keda_scales_the_ingestor_up_and_back_down_and_loses_nothing(autoscaled: Cluster) -> None:
    with timed("the spike LoadTest, from apply to its verdict"):
        lt = run_loadtest(autoscaled, LOADTEST, "e2e-autoscaling")
    status = lt["status"]
    results = only_run(lt)
    ingestor = results["deployments"]["ingestor"]
    scaling = ingestor["scaling"]
    run_seconds = results["loadSeconds"] + results["drainSeconds"]
    desired = [point["desired"] for point in ingestor["timeline"] if point.get("desired") is not None]
    print(f"autoscaling tier: phase {status['phase']}, scaling {scaling}, desired replicas over the run {desired}, "
          f"load {results['loadSeconds']} s + drain {results['drainSeconds']} s, deepest queue "
          f"{results['queues'][QUEUES[0]]}, ledger {results['ledger']}")
    settings = yaml.safe_load(LOADTEST.read_text())["spec"]["system"]["autoscaling"]["ingestor"]
    # KEDA added replicas, after a measured lag from the queue's rise past its trigger ...
    assert scaling["autoscaler"] == "keda", scaling
    assert scaling["scaleUpLagSeconds"] is not None and scaling["scaleUpLagSeconds"] > 0, scaling
    assert max(desired) > settings["minReplicas"], desired
    # ... and removed them again within the run: up and down are two changes at least.
    assert scaling["replicaChanges"] >= 2, scaling
    assert desired[-1] == settings["minReplicas"] and scaling["scaleDownSeconds"] is not None, (desired, scaling)
    # The cost: more than the fixed minimum would have had over the same load and drain.
    assert scaling["replicaSeconds"] > settings["minReplicas"] * run_seconds, (scaling, run_seconds)
    # Nothing lost while replicas came and went (a scale-down drains its consumer), the queue empty.
    assert_nothing_lost_or_persisted_twice(results)
    assert results["drainCompleted"] is True and results["queues"][QUEUES[0]]["final"] == 0, results["queues"]
    # The run's ScaledObject is gone (KEDA let its finalizer go and removed its HPA), and the
    # ingestor is back at the replicas it had before.
    wait_for(lambda: not autoscaled.kubectl_json("get", "scaledobjects.keda.sh", "-n", NAMESPACE)["items"],
             "the run's ScaledObject to be deleted", 120, interval=2)
    wait_for(lambda: not autoscaled.kubectl_json("get", "horizontalpodautoscalers", "-n", NAMESPACE)["items"],
             "KEDA's HPA to be deleted", 120, interval=2)
    wait_for(lambda: autoscaled.kubectl_json("get", "deployment", "ingestor", "-n", NAMESPACE)["spec"]["replicas"] == 1,
             "the ingestor's replicas to be restored to 1", 60, interval=1)
