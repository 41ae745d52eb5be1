"""The Elves release on the test cluster, as the tier-4 tests install and drive it: the chart's
values for this cluster, helm, LoadTests applied and awaited as a user would, and Prometheus.
Shared by tests/e2e (test_user_path.py, test_foreign_system.py, test_autoscaling.py) and
bench/cluster_cases.py; here, not under tests/, so a bench imports no test code."""

from __future__ import annotations

import json
import sys
import time
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import yaml

from diagnostics import loadtest_diagnostics
from elves.engine.models.status import Phase
from kube import REPO, Cluster, CommandFailed, run
from polling import wait_for

NAMESPACE = "elves"
RELEASE = "elves"
OPERATOR = f"{RELEASE}-operator"  # the chart's elves.operator.name for this release
PROMETHEUS_URL = "http://prometheus.monitoring.svc:9090"
PROMETHEUS_PROXY = "/api/v1/namespaces/monitoring/services/prometheus:9090/proxy"
QUEUES = ("elves.ingestor.data.in", "elves.registry.applog.in", "elves.registry.ingestor.in")
IMAGES = ("rabbitmq", "postgres", "prometheus", "kube-state-metrics", "prometheus-operator",
          "prometheus-config-reloader", "k6-operator", "k6", "k6-starter", "operator",
          "gateway", "registry", "ingestor")
AUTOSCALING_IMAGES = ("keda", "keda-metrics-apiserver", "metrics-server")
INSTALL_TIMEOUT_S = 1200
LOADTEST_TIMEOUT_S = 900


ELVES_SYSTEM = ("gateway", "registry", "ingestor", "rabbitmq", "postgres")


def elves_system_objects(cluster: Cluster) -> list[str]:
    """What of Elves' own system (its services, broker and database) the release namespace holds:
    its Deployments, StatefulSets, Services and pods, by kind and name (none in the harness alone)."""
    objects = cluster.kubectl_json("get", "deployments,statefulsets,services,pods", "-n", NAMESPACE)["items"]
    return sorted(f"{o['kind']} {o['metadata']['name']}" for o in objects
                  if o["metadata"]["name"].split("-")[0] in ELVES_SYSTEM)


def endpoints(cluster: Cluster, namespace: str, service: str) -> tuple[list[str], dict[str, int]]:
    """The addresses and the ports (by name) behind a Service: what a pod's packet to it is
    sent to once kube-proxy has translated it, so what a NetworkPolicy's egress rule sees."""
    slices = cluster.kubectl_json("get", "endpointslices", "-n", namespace, "-l", f"kubernetes.io/service-name={service}")
    addresses = [a for s in slices["items"] for e in s.get("endpoints") or [] for a in e["addresses"]]
    ports = {p.get("name") or "": p["port"] for s in slices["items"] for p in s.get("ports") or []}
    return addresses, ports


def e2e_values(cluster: Cluster) -> dict:
    """The chart values of this tier: images built here, no PersistentVolumes, and the
    NetworkPolicies' DNS and API server ports as this cluster has them (CoreDNS listens on
    1053, the API server on 16443): the policies are enforced here, so they must be right."""
    def image(name: str) -> dict:
        repository, tag = cluster.image(name).rsplit(":", 1)
        return {"repository": repository, "tag": tag, "pullPolicy": "Never"}

    api_addresses, api_ports = endpoints(cluster, "default", "kubernetes")
    _, dns_ports = endpoints(cluster, "kube-system", "kube-dns")
    return {
        # The Debian-built brokers stand in for the official images, which cannot be pulled.
        "rabbitmq": {"image": image("rabbitmq"), "persistence": {"enabled": False}},
        "postgresql": {"image": image("postgres"), "persistence": {"enabled": False}},
        # k6-operator's runner pods run the k6 built by tools/install-k6.sh.
        "operator": {"env": {"ELVES_K6_IMAGE": cluster.image("k6")}},
        "networkPolicy": {
            "dns": {"ports": sorted({dns_ports["dns"], dns_ports["dns-tcp"]})},
            "apiServer": {"cidrs": [f"{a}/32" for a in api_addresses], "ports": sorted(api_ports.values())},
        },
    }


def helm(cluster: Cluster, *args: str) -> str:
    """The pinned helm (tools/which-helm.sh), as a user would run it against this cluster."""
    binary = run([str(REPO / "tools" / "which-helm.sh")], timeout=30).strip()
    return run([binary, *args], env={"KUBECONFIG": cluster.kubeconfig}, timeout=INSTALL_TIMEOUT_S)


def run_loadtest(cluster: Cluster, manifest: Path, name: str, namespace: str = NAMESPACE,
                 expect: tuple[Phase, ...] = ("Succeeded",)) -> dict:
    """Applies a LoadTest (with what its file holds beside it: a ConfigMap, a SystemUnderTest)
    in `namespace` and waits for its end (await_loadtest); returns it."""
    apply_loadtest(cluster, manifest, namespace)
    return await_loadtest(cluster, name, namespace, expect)


def apply_loadtest(cluster: Cluster, manifest: Path, namespace: str = NAMESPACE) -> None:
    """`kubectl apply` of a LoadTest's file, as a user would; await_loadtest waits for its end. A
    test that has something of its own to wait for does it between the two, while the LoadTest
    starts its runners."""
    cluster.kubectl("apply", "-n", namespace, "-f", str(manifest))


def await_loadtest(cluster: Cluster, name: str, namespace: str = NAMESPACE,
                   expect: tuple[Phase, ...] = ("Succeeded",)) -> dict:
    """Waits for an applied LoadTest as a user or a CI job would, with `kubectl wait
    --for=condition=Completed` (True on any end: Succeeded, Failed, Limited or Error); returns it.
    A LoadTest that does not end in time, or ends in a phase not in `expect`, fails the test with
    what is needed to find why (tools/e2e/diagnostics.py), read before the cluster goes."""
    def failed(why: str) -> AssertionError:
        return AssertionError(f"{why}\n{loadtest_diagnostics(cluster, name, namespace, NAMESPACE, OPERATOR)}")

    try:
        cluster.kubectl("wait", f"loadtest/{name}", "-n", namespace, "--for=condition=Completed",
                        f"--timeout={LOADTEST_TIMEOUT_S}s", timeout=LOADTEST_TIMEOUT_S + 30)
    except CommandFailed as exc:
        raise failed(f"LoadTest {name} did not complete within {LOADTEST_TIMEOUT_S} s ({exc})") from None
    lt = cluster.kubectl_json("get", "loadtest", name, "-n", namespace)
    phase = lt["status"]["phase"]
    if phase not in expect:
        raise failed(f"LoadTest {name} ended in phase {phase}, not {' or '.join(expect)}")
    conditions = {c["type"]: c for c in lt["status"]["conditions"]}
    assert phase in ("Succeeded", "Failed", "Limited", "Error")
    assert conditions["Completed"]["observedGeneration"] == lt["metadata"]["generation"]
    assert conditions["Failed"]["status"] == ("False" if phase == "Succeeded" else "True")
    return lt


def promql(cluster: Cluster, query: str, at: float | None = None) -> list[dict]:
    """An instant query to the cluster's Prometheus, through the API server's Service proxy."""
    params = {"query": query, **({"time": f"{at:.3f}"} if at else {})}
    body = json.loads(cluster.kubectl("get", "--raw", f"{PROMETHEUS_PROXY}/api/v1/query?{urllib.parse.urlencode(params)}"))
    assert body["status"] == "success", body
    return body["data"]["result"]


def only_run(lt: dict) -> dict:
    """The results of a LoadTest without a sweep (its one run)."""
    run, = lt["status"]["runs"]
    assert run.get("results"), json.dumps(lt["status"], indent=1)[:4000]
    return run["results"]


@contextmanager
def untimed(_step: str) -> Iterator[None]:
    yield


def install_with_autoscaling(cluster: Cluster, values: Path,
                             timed: Callable[[str], AbstractContextManager[None]] = untimed) -> None:
    """KEDA, metrics-server, the monitoring and k6-operator, then the Elves release after them
    (so it renders the TriggerAuthentication and its NOTES name nothing missing), until Prometheus
    scrapes RabbitMQ: the autoscaling tier's cluster (test_autoscaling.py) and the cluster cases'
    (bench/cluster_cases.py). `timed(step)` wraps each step (the tier prints how long it took)."""
    with timed("images (KEDA and metrics-server built from their Go modules when not cached), imported"):
        cluster.load_images(*IMAGES, *AUTOSCALING_IMAGES, timeout=3600)
    with timed("add-ons: monitoring, k6-operator, KEDA, metrics-server, until their APIs are Available"):
        run([sys.executable, str(REPO / "tools" / "e2e" / "addons.py"), "apply", "--autoscaling"],
            env={"KUBECONFIG": cluster.kubeconfig}, timeout=INSTALL_TIMEOUT_S)
    values.write_text(yaml.safe_dump(e2e_values(cluster)))
    with timed("the elves chart, until rolled out"):
        notes = helm(cluster, "install", RELEASE, str(REPO / "charts" / "elves"), "-n", NAMESPACE,
                     "--create-namespace", "-f", str(values), "--set", f"operator.prometheusUrl={PROMETHEUS_URL}",
                     "--wait", "--timeout", "15m")
    assert "MISSING from this cluster" not in notes, notes
    assert "kind: TriggerAuthentication" in helm(cluster, "get", "manifest", RELEASE, "-n", NAMESPACE)
    # A LoadTest's drain reads queue depth: wait until Prometheus scrapes RabbitMQ.
    wait_for(lambda: promql(cluster, "rabbitmq_detailed_queue_messages"), "Prometheus to scrape RabbitMQ", 300,
             interval=5)


@contextmanager
def timed_step(tier: str, step: str) -> Iterator[None]:
    """Prints how long a step took (`pytest -rA` or `-s` shows it): the times docs/testing.md gives."""
    started = time.monotonic()
    yield
    print(f"{tier}: {step}: {time.monotonic() - started:.0f} s")
