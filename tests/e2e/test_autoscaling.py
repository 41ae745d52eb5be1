"""The opt-in autoscaling tests (`make test-autoscaling`, or `pytest -m autoscaling tests/e2e`):
a real KEDA scale-up and scale-down and a real HPA scale-up on the test cluster, with nothing lost.

KEDA v2.21.0 (its operator and its external metrics API server, with the scalers the cluster
uses: tools/e2e/trim_keda.py) and metrics-server v0.8.0 are built from their Go modules and
installed as aggregated APIs
behind cluster.sh's front proxy (`tools/e2e/addons.py apply --autoscaling`, beside the monitoring
and k6-operator); the chart is installed after them, so it renders the TriggerAuthentication a
LoadTest's ScaledObject uses. Then a spike (loadtests/autoscaling-spike.yaml) with
spec.system.autoscaling.ingestor in mode keda and .gateway in mode hpa, in one run: the
LoadTest's status must show the ingestor's scale-up (a lag) and scale-down (two replica changes
or more), replica-seconds above what the fixed minimum would have cost over the same run, the
gateway's HPA adding a replica on the CPU the load caused (metrics-server has the idle gateway
below the HPA's target first), the ledger exact while replicas came and went, and the verdict
Passed.

`make test-e2e` does not select these (tests/e2e/conftest.py deselects the `autoscaling` marker
unless -m names it): inside `make test` on a cold machine they took it to 77.0 minutes, over its
75 (docs/testing.md has the times).
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest
import yaml

from kube import Cluster
from ledger_checks import assert_nothing_lost_or_persisted_twice
from polling import wait_for
from release import NAMESPACE, QUEUES, install_with_autoscaling, only_run, run_loadtest, timed_step

pytestmark = pytest.mark.autoscaling

LOADTEST = Path(__file__).parent / "loadtests" / "autoscaling-spike.yaml"
timed = partial(timed_step, "autoscaling tier")


@pytest.fixture(scope="module")
def autoscaled(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Cluster:
    """The cluster with KEDA, metrics-server, the monitoring and k6-operator, then the Elves
    release installed after them (so its NOTES name nothing missing). Nothing cleans it up after:
    these tests run last when selected (conftest.py), and the cluster goes down after them."""
    install_with_autoscaling(cluster, tmp_path_factory.mktemp("autoscaling") / "values.yaml", timed)
    return cluster


def cpu_usage(cluster: Cluster, deployment: str) -> list[str]:
    """Its containers' CPU as metrics.k8s.io has it, e.g. ["4m"] ([]: not yet scraped)."""
    pods = json.loads(cluster.kubectl("get", "--raw", f"/apis/metrics.k8s.io/v1beta1/namespaces/{NAMESPACE}/pods"))
    return [c["usage"]["cpu"] for p in pods["items"] if p["metadata"]["name"].startswith(f"{deployment}-")
            for c in p["containers"] if c["name"] == deployment]


def millicores(quantity: str) -> float:
    """A CPU quantity as metrics.k8s.io and pod specs write it (250m, 1, 1500000n) in millicores."""
    units = {"n": 1e-6, "u": 1e-3, "m": 1.0}
    return float(quantity[:-1]) * units[quantity[-1]] if quantity[-1] in units else float(quantity) * 1000


def test_metrics_server_and_keda_serve_their_aggregated_apis(autoscaled: Cluster) -> None:
    """Through the API server's front proxy: metrics-server has the pods' CPU from the kubelet
    (reached on loopback, its certificate checked), and KEDA's adapter lists its API. The idle
    gateway is below the CPU its HPA aims at in the spike, so a scale-up there is the load's."""
    # metrics-server's first scrape comes one resolution (15 s) after it started.
    usage = wait_for(lambda: cpu_usage(autoscaled, "ingestor"), "metrics-server to report the ingestor's CPU", 120,
                     interval=5, ignore=(AssertionError,))
    print(f"autoscaling tier: metrics.k8s.io has the ingestor's CPU: {usage}")
    external = json.loads(autoscaled.kubectl("get", "--raw", "/apis/external.metrics.k8s.io/v1beta1"))
    assert external["groupVersion"] == "external.metrics.k8s.io/v1beta1", external

    # The gateway's JVM, just started with the release, uses more than the target for a while
    # (30m of its 100m on 2026-11-30); the spike comes next, once it has settled below it.
    container, = [c for c in autoscaled.kubectl_json("get", "deployment", "gateway", "-n", NAMESPACE)
                  ["spec"]["template"]["spec"]["containers"] if c["name"] == "gateway"]
    request = millicores(container["resources"]["requests"]["cpu"])
    target = yaml.safe_load(LOADTEST.read_text())["spec"]["system"]["autoscaling"]["gateway"]["cpuUtilization"]

    def gateway_below_target() -> str:
        usage, = cpu_usage(autoscaled, "gateway")
        assert millicores(usage) < request * target / 100, f"the gateway uses {usage}"
        return usage

    idle = wait_for(gateway_below_target, f"the idle gateway to use less than {target}% of its {request:g}m request",
                    300, interval=5, ignore=(AssertionError, ValueError))
    print(f"autoscaling tier: the idle gateway uses {idle} of its {request:g}m request; its HPA aims at {target}%")


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
    # The gateway's HPA added a replica on the load's CPU (metrics-server's), and it became Ready.
    gateway = results["deployments"]["gateway"]
    gateway_desired = [point["desired"] for point in gateway["timeline"] if point.get("desired") is not None]
    print(f"autoscaling tier: the gateway's HPA: scaling {gateway['scaling']}, desired replicas {gateway_desired}")
    assert gateway["scaling"]["autoscaler"] == "hpa", gateway["scaling"]
    assert gateway_desired[0] == 1 and max(gateway_desired) == 2, gateway_desired
    assert gateway["scaling"]["scaleUpLagSeconds"] is not None, gateway["scaling"]
    # Nothing lost while replicas came and went (a scale-down drains its consumer), the queue empty.
    assert_nothing_lost_or_persisted_twice(results)
    assert results["drainCompleted"] is True and results["queues"][QUEUES[0]]["final"] == 0, results["queues"]
    # The run's ScaledObject is gone (KEDA let its finalizer go and removed its HPA), and the
    # ingestor is back at the replicas it had before.
    wait_for(lambda: not autoscaled.kubectl_json("get", "scaledobjects.keda.sh", "-n", NAMESPACE)["items"],
             "the run's ScaledObject to be deleted", 120, interval=2)
    wait_for(lambda: not autoscaled.kubectl_json("get", "horizontalpodautoscalers", "-n", NAMESPACE)["items"],
             "KEDA's HPA to be deleted", 120, interval=2)
    for deployment in ("ingestor", "gateway"):
        wait_for(lambda name=deployment: autoscaled.kubectl_json("get", "deployment", name, "-n", NAMESPACE)
                 ["spec"]["replicas"] == 1,
                 f"the {deployment}'s replicas to be restored to 1", 60, interval=1)
