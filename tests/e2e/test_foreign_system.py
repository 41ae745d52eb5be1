"""Tier 4: a system that is not Elves, judged by a LoadTest on the real cluster.

The orders system (tests/e2e/orders-system: one Go program, run as orders-api and
orders-worker, with its own RabbitMQ and PostgreSQL) runs in namespace `shop` as another team's
would: scraped by the cluster's Prometheus through its own ServiceMonitor and PodMonitor, behind
NetworkPolicies that let only k6's runner pods call its API. The Elves release is the harness alone
(conftest.py's `harness`: system.enabled: false, as `./deployments.sh --harness-only` installs it;
none of Elves' services, broker or database exist beside shop while it is judged), told to run
LoadTests and act on workloads there (`operator.loadTestNamespaces`,
`operator.targetNamespaces`), and the published example's script goes into a ConfigMap, as
docs/own-system.md tells a user. Then:
- the SystemUnderTest `orders` and a LoadTest (loadtests/orders-kill.yaml: 20/s for 60 s against
  a worker that stores at most 10 a second, a second worker replica at 40 s, a worker's pod
  deleted at 55 s, whose successor is ready 25 s after it starts): the verdict Passed, with an
  objective on workload orders-worker; a backlog of hundreds in orders.in that the drain waited
  out, and the drain waiting for the worker to be ready again; the ledger exact (accepted ==
  persisted > 0, which the database confirms, nothing lost, no surplus); the results showing the
  broker and the database the SystemUnderTest chooses by a label; the killed pod replaced, the
  worker back at 1 replica;
- a SystemUnderTest whose accepted count names an endpoint tag the script never uses
  (loadtests/orders-unchecked.yaml): the verdict says the ledger could not be checked;
- "how many workers hold this load?" (loadtests/orders-workers-sweep.yaml): the worker's PREFETCH
  and memory limit set as the SystemUnderTest offers, its replicas swept 1 then 2; each point
  drained with the ledger exact, the sweep table, the worker put back as it was.

Runs before test_user_path.py, whose `installed` upgrades the same release to Elves' own system;
the namespace `shop` is deleted after it (a test of another system beside Elves' own, leaving its
deployments untouched, is tier 3's: tests/apiserver/test_operator_foreign_target.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from kube import REPO, Cluster
from polling import wait_for
from release import NAMESPACE, RELEASE, elves_system_objects, helm, only_run, promql, run_loadtest, timed_step

SHOP = "shop"
ORDERS_SYSTEM = Path(__file__).parent / "orders-system"
LOADTESTS = Path(__file__).parent / "loadtests"
EXAMPLE_SCRIPT = REPO / "loadtests" / "examples" / "own-system" / "orders.js"
QUEUE = "orders.in"
SHOP_DEPLOYMENTS = ("rabbitmq", "postgres", "orders-api", "orders-worker")
timed = partial(timed_step, "foreign system")


@pytest.fixture(scope="module")
def shop(harness: Cluster) -> Iterator[Cluster]:
    """The orders system running in `shop`, scraped, and the harness allowed to judge it."""
    installed = harness
    with timed("the orders image (built when not cached), imported"):
        installed.load_images("orders")
    manifest = (ORDERS_SYSTEM / "shop.yaml").read_text()
    for image in ("orders", "rabbitmq", "postgres"):
        manifest = manifest.replace(f"{image.upper()}_IMAGE", installed.image(image))
    with timed("shop deployed and scraped, the release upgraded to serve it"):
        installed.apply(manifest)
        installed.apply(json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                                    "metadata": {"name": "orders-script", "namespace": SHOP},
                                    "data": {"orders.js": EXAMPLE_SCRIPT.read_text()}}))
        helm(installed, "upgrade", RELEASE, str(REPO / "charts" / "elves"), "-n", NAMESPACE, "--reuse-values",
             "--set", f"operator.loadTestNamespaces={{{SHOP}}}", "--set", f"operator.targetNamespaces={{{SHOP}}}",
             "--wait", "--timeout", "10m")
        # The chart's values for a team's namespaces change nothing of the harness alone.
        assert elves_system_objects(installed) == []
        for deployment in SHOP_DEPLOYMENTS:
            installed.kubectl("rollout", "status", f"deployment/{deployment}", "-n", SHOP, "--timeout=300s",
                              timeout=330)
        # The drain reads the queue's depth and the ledger the worker's count: both scraped first.
        wait_for(lambda: promql(installed, f'rabbitmq_detailed_queue_messages_ready{{namespace="{SHOP}", queue="{QUEUE}"}}'),
                 f"Prometheus to scrape {QUEUE} in {SHOP}", 300, interval=5)
        wait_for(lambda: promql(installed, f'up{{namespace="{SHOP}", pod=~"orders-worker-.*"}} == 1'),
                 "Prometheus to scrape orders-worker", 300, interval=5)
    yield installed
    # The LoadTests first, while the operator may still act in shop (their finalizers restore
    # the workloads' replicas), then the namespace.
    installed.kubectl("delete", "loadtests.elves.dev", "--all", "-n", SHOP, "--timeout=120s", timeout=150)
    installed.kubectl("delete", "namespace", SHOP, "--wait=false")


def pods(cluster: Cluster, namespace: str, selector: str) -> list[dict]:
    return cluster.kubectl_json("get", "pods", "-n", namespace, "-l", selector)["items"]


def stored_in_database(cluster: Cluster, test_id: str) -> tuple[int, int]:
    """(rows, distinct order ids) the worker stored for a test, asked of PostgreSQL itself."""
    out = cluster.kubectl("exec", "-n", SHOP, "deployment/postgres", "--", "psql", "-U", "shop", "-d", "shop",
                          "-tAc", f"SELECT count(*), count(DISTINCT id) FROM orders WHERE test_id = '{test_id}'")
    rows, distinct = out.strip().split("|")
    return int(rows), int(distinct)


def test_a_loadtest_judges_the_orders_system_through_a_worker_kill(shop: Cluster) -> None:
    with timed("the orders-kill LoadTest, from apply to its verdict"):
        lt = run_loadtest(shop, LOADTESTS / "orders-kill.yaml", "orders-kill", namespace=SHOP)
    status, results = lt["status"], only_run(lt)
    run = status["runs"][0]
    ledger, queue = results["ledger"], results["queues"].get(QUEUE)
    print(f"foreign system: phase {status['phase']}, requests {results['requests']}, failed rate "
          f"{results.get('errorRate')}, drain {results.get('drainSeconds')} s, queue {queue}, ledger {ledger}; "
          f"faults: {[f.get('message') for f in run['faults']]}; not ready after the load: "
          f"{run.get('unreadyAfterLoad')!r}; checks: {[(c['name'], c.get('observed')) for c in status['verdict']['checks']]}")
    assert status["verdict"]["passed"] is True
    # The drain waited on the target's queue, read from its own RabbitMQ's series in `shop`: a
    # real backlog (the worker stores at most half the load), waited out.
    assert queue is not None and queue["max"] >= 50 and queue["final"] == 0, results["queues"]
    assert results["drainCompleted"] is True and run.get("drainedAt"), results
    assert results["drainSeconds"] >= 10, results["drainSeconds"]
    # ... and on the worker's readiness: the pod the kill left was still starting after the load.
    assert run["unreadyAfterLoad"].startswith("Deployment orders-worker: "), run.get("unreadyAfterLoad")
    # The results' deployments are the target's workloads, not Elves' (whose restarts and
    # replicas would otherwise judge a system the test did not target): those it names and
    # those its label chooses.
    assert set(results["deployments"]) == {"orders-api", "orders-worker", "rabbitmq", "postgres"}, \
        results["deployments"]
    assert results["deployments"]["postgres"]["replicasMax"] == 1, results["deployments"]["postgres"]
    # The objective on workload orders-worker judged its unready stretch: the new replicas' start.
    (unready,) = [c for c in status["verdict"]["checks"] if c["name"] == "unready_seconds{orders-worker}"]
    assert unready["ok"] and unready["observed"] > 0, unready
    # The exact ledger: k6's 202s of placeOrder against the orders the database holds for this
    # test, equal, the same count PostgreSQL gives, each order once.
    assert ledger["kind"] == "counts" and ledger["acceptedCounted"] == "k6's 2xx answers of endpoint placeOrder"
    assert ledger["requestsAccepted"] == ledger["requestsPersisted"] > 0, ledger
    assert ledger["lostRequests"] == 0 and ledger.get("surplus", 0) == 0, ledger
    assert ledger["requestsAccepted"] == results["endpoints"]["placeOrder"]["ok"], results["endpoints"]
    assert stored_in_database(shop, run["testId"]) == (ledger["requestsPersisted"],) * 2
    # The kill deleted one of the worker's pods (the first or the one the scale added), which is
    # gone, and a new one took its place ...
    kill, = [f for f in run["faults"] if f["label"] == "killPod orders-worker"]
    killed = kill["message"].split()[2]
    assert kill["message"].startswith("deleted pod orders-worker-"), kill
    # ... and the second replica the scale fault added is taken away again after the verdict.
    wait_for(lambda: shop.kubectl_json("get", "deployment", "orders-worker", "-n", SHOP)["spec"]["replicas"] == 1,
             "orders-worker's replicas to be restored to 1", 60, interval=1)
    workers_after = {p["metadata"]["name"] for p in pods(shop, SHOP, "app=orders-worker")
                     if p["status"].get("phase") == "Running"}
    assert workers_after and killed not in workers_after, (killed, workers_after)
    # Judged on the harness alone: nothing of Elves' own system ran beside it.
    assert elves_system_objects(shop) == []


def test_a_ledger_that_counts_nothing_could_not_be_checked(shop: Cluster) -> None:
    with timed("the orders-unchecked LoadTest, from apply to its verdict"):
        lt = run_loadtest(shop, LOADTESTS / "orders-unchecked.yaml", "orders-unchecked", namespace=SHOP,
                          expect=("Failed",))
    status, results = lt["status"], only_run(lt)
    ledger = results["ledger"]
    print(f"foreign system, miscounted: phase {status['phase']}, requests {results['requests']}, ledger {ledger}")
    # The orders were placed and stored; the ledger's accepted count just took in none of them.
    assert (ledger["kind"], ledger["requestsAccepted"]) == ("counts", 0), ledger
    assert results["endpoints"]["placeOrder"]["ok"] > 0 and ledger["requestsPersisted"] > 0, (results, ledger)
    failed = {c["name"]: c for c in status["verdict"]["checks"] if not c["ok"]}
    assert set(failed) == {"lost_requests"}, status["verdict"]["checks"]
    assert failed["lost_requests"]["detail"] == ("the ledger could not be checked: nothing was accepted "
                                                 "(k6's 2xx answers of endpoint noSuchEndpoint: 0)")


WORKER = "orders-worker"
SWEPT = f"system.replicas.{WORKER}"


def worker_container(cluster: Cluster) -> tuple[int, dict]:
    deployment = cluster.kubectl_json("get", "deployment", WORKER, "-n", SHOP)
    container, = deployment["spec"]["template"]["spec"]["containers"]
    return deployment["spec"]["replicas"], container


def test_a_replicas_sweep_of_the_worker_says_how_many_hold_the_load(shop: Cluster) -> None:
    """loadtests/orders-workers-sweep.yaml: the worker's PREFETCH and memory limit set for the test,
    its replicas swept 1 then 2 under the same 20 s load. Each point drains with the ledger exact;
    the sweep table has a row per point; after the last run the worker is back as it was."""
    replicas_before, container_before = worker_container(shop)
    lt = run_loadtest(shop, LOADTESTS / "orders-workers-sweep.yaml", "orders-workers", namespace=SHOP)
    status = lt["status"]
    rows = status.get("sweep") or []
    print(f"foreign sweep: phase {status['phase']}; " + "; ".join(
        f"{row['point']}: throughput {row.get('throughput')}, deepest {row.get('queueDepthMax')}, lost"
        f" {row.get('lost')}, passed {row.get('passed')}" for row in rows))
    # One run per point, each drained with the ledger exact.
    assert [run["point"] for run in status["runs"]] == [{SWEPT: 1}, {SWEPT: 2}]
    for run in status["runs"]:
        ledger = run["results"]["ledger"]
        assert ledger["requestsAccepted"] == ledger["requestsPersisted"] > 0 and ledger["lostRequests"] == 0, ledger
        assert run["results"]["drainCompleted"] is True, run["results"]
        # The run had the worker's replicas of its point (kube-state-metrics' desired replicas).
        assert run["results"]["deployments"][WORKER]["replicasMax"] == run["point"][SWEPT], run["results"]["deployments"]
    assert [(row["point"], row["passed"]) for row in rows] == [({SWEPT: 1}, True), ({SWEPT: 2}, True)]
    # Everything the test changed of the worker is back: replicas, PREFETCH, the memory limit.
    wait_for(lambda: worker_container(shop) == (replicas_before, container_before),
             "orders-worker's replicas, env and limits to be restored", 120, interval=2)
    assert elves_system_objects(shop) == []
