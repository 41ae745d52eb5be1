"""On a cluster, each k6 runner pod's CPU over the load against its CPU limit, for the rule that
tells a run the generator limited (elves.engine.results.generator_limit): the run's runner pods from the
API server, their `k6` container's CPU from cAdvisor's series in a real Prometheus. Another
namespace's pod of the same name, the pod-level and other containers' series do not count."""

from __future__ import annotations

import time
from typing import Any

import pytest

from elves.engine.models.status import GeneratorCpu, RunResults, Window
from elves.engine.planning.platform import RunKey
from elves.engine.results.generator_limit import busiest, generator_limits
from elves.k8s import names
from elves.k8s.platform import KubernetesPlatform
from elves.k8s.settings import OperatorSettings
from engine_testkit import PrometheusServer, backfill

OWNER = names.Owner("team-a", "case-3", "1234-abcd")
T0 = (int(time.time()) - 3 * 3600) // 60 * 60
LOAD = (T0 + 10, T0 + 70)
# (namespace, pod, container) -> cores used all along.
USAGE = {
    ("team-a", "elves-case-3-4-1-abcde", "k6"): 0.5,
    ("team-a", "elves-case-3-4-2-fghij", "k6"): 1.9,
    ("team-a", "elves-case-3-4-2-fghij", "sidecar"): 3.0,  # another container of the pod
    ("team-a", "elves-case-3-4-2-fghij", ""): 4.9,  # cAdvisor's series of the whole pod
    ("team-b", "elves-case-3-4-1-abcde", "k6"): 7.0,  # another namespace's pod of the same name
    ("team-a", "elves-case-3-4-3-klmno", "k6"): 2.0,  # a runner without a CPU limit
}


def runner_pod(name: str, cpu_limit: str | None) -> dict[str, Any]:
    limits = {"memory": "1Gi", **({"cpu": cpu_limit} if cpu_limit else {})}
    return {"metadata": {"name": name, "namespace": "team-a"},
            "spec": {"containers": [{"name": "k6", "resources": {"limits": limits}},
                                    {"name": "sidecar", "resources": {"limits": {"cpu": "4"}}}]}}


class PodsKube:
    """The runner pods the API server lists for a label selector."""

    def __init__(self, pods: list[dict[str, Any]]):
        self.items, self.selectors = pods, []

    def pods(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        self.selectors.append((namespace, selector))
        return self.items


@pytest.fixture(scope="module")
def cadvisor_prometheus(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("cadvisor")
    samples = [(f'container_cpu_usage_seconds_total{{namespace="{ns}",pod="{pod}",container="{container}"}}',
                cores * offset, T0 + offset)
               for (ns, pod, container), cores in USAGE.items() for offset in range(0, 121, 5)]
    server = PrometheusServer(workdir, data_dir=backfill(workdir, samples))
    yield server.url
    server.stop()


def test_each_runner_pods_k6_cpu_is_read_against_its_limit(cadvisor_prometheus):
    kube = PodsKube([runner_pod("elves-case-3-4-1-abcde", "1"), runner_pod("elves-case-3-4-2-fghij", "2000m"),
                     runner_pod("elves-case-3-4-3-klmno", None)])
    platform = KubernetesPlatform(OperatorSettings(prometheus_url=cadvisor_prometheus), kube,  # type: ignore[arg-type]
                                  OWNER, clock=lambda: 0.0)
    runners = platform.generator_cpu(RunKey(4, "team-a/case-3/4"), *LOAD)
    assert kube.selectors == [("team-a", "k6_cr=elves-case-3-4,runner=true")]  # the run's runners, not its initializer
    assert [(r.cores_used, r.cores) for r in runners] == [(pytest.approx(0.5, rel=0.02), 1.0),
                                                          (pytest.approx(1.9, rel=0.02), 2.0)]
    # The busiest is the one nearest its limit, and the verdict's rule finds it full.
    top = busiest(runners)
    assert top is not None and top.cores == 2.0
    results = RunResults(window=Window(start=0, end=0), load_seconds=60, generator_cpu=top)
    assert generator_limits(results)[0].startswith("a k6 runner used 1.90 of its 2 core(s) (95%) over the load")


def test_runners_the_api_server_no_longer_lists_leave_the_cpu_unknown(cadvisor_prometheus):
    platform = KubernetesPlatform(OperatorSettings(prometheus_url=cadvisor_prometheus), PodsKube([]),  # type: ignore[arg-type]
                                  OWNER, clock=lambda: 0.0)
    assert platform.generator_cpu(RunKey(4, "team-a/case-3/4"), *LOAD) == []
    assert busiest([]) is None and busiest([GeneratorCpu(cores_used=0.2, cores=1)]).cores_used == 0.2
