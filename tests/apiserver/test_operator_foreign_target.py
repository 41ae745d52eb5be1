"""The operator follows a LoadTest against a SystemUnderTest that is not Elves through its
stages (tier 3): the orders system of loadtests/examples/own-system/, its
SystemUnderTest in the LoadTest's namespace and its k6 script in a ConfigMap, as docs/own-system.md
tells a user to apply them. The drain waits on the target's queue in the target's namespace, the
counts ledger is read from Prometheus, the registry of Elves is never asked, a ledger that
accepted nothing fails, and a fault (which would act on Elves' deployments) is refused.

The test plays k6-operator and the kubelet (it moves the TestRun's stage and runs the runner's
k6 itself); ForeignSystemStandIn plays the orders service: see test_operator_kit.py.
"""

from __future__ import annotations

import json
import base64
from pathlib import Path
from typing import Any, Callable

import pytest
from foreign_system import foreign_system
from polling import wait_for

from elves.constants import API_GROUP, API_VERSION, DEPLOYMENTS, SUT_PLURAL
from elves.engine.models.status import FINAL_PHASES

from . import control_plane as cp
from .test_operator_kit import Cluster, ForeignSystemStandIn, SystemStandIn, operator, run_runner, start_prometheus
from .test_operator_loadtests import (  # noqa: F401 - the module's fixtures, shared
    STAGES_BEFORE_START, cluster, env, events_with, gateway, phase_is, stand_in,
)

SUT_CRD_FILE = cp.REPO / "charts" / "elves" / "crds" / "systemundertests.elves.dev.yaml"
EXAMPLE_SCRIPT = cp.REPO / "loadtests" / "examples" / "own-system" / "orders.js"
# Where the example script posts its orders (ORDERS_URL), from a Secret the runners take.
ENDPOINT_SECRET = "orders-endpoint"
PERSISTED = 'sum(orders_saved_total{test_id="$TEST_ID"})'


@pytest.fixture(scope="module")
def decoy(cluster: Cluster) -> str:
    """env's decoy, a namespace of this module's own: test_operator_loadtests.py's (the chart's
    Secret and Deployments in DECOY_NAMESPACE) is made by that module, and made twice on one API
    server it would collide (409), as it did when the tier ran whole."""
    return cluster.namespace("decoy-foreign-target")


@pytest.fixture(scope="module")
def foreign() -> Any:
    system = ForeignSystemStandIn()
    yield system
    system.stop()


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory, stand_in: SystemStandIn,
               foreign: ForeignSystemStandIn) -> Any:
    """Scraping Elves' stand-in (its registry is there, to be never asked) and the orders system."""
    server = start_prometheus(tmp_path_factory.mktemp("foreign-prometheus"), stand_in.url, foreign.url)
    yield server
    server.stop()


@pytest.fixture
def orders(control_plane: cp.ControlPlane, cluster: Cluster, env: dict[str, Any],
           foreign: ForeignSystemStandIn) -> dict[str, Any]:
    """The orders system's pieces in the LoadTest's namespace, as docs/own-system.md has a user
    apply them: the example's script in a ConfigMap, a Secret telling it where the orders API is
    (spec.runner.envFromSecrets, allowed by the chart's operator.runner.envFromSecrets), its queue
    in the stand-in's series; and a way to create its SystemUnderTest `orders`."""
    control_plane.install_crds(SUT_CRD_FILE)
    ns = env["namespace"]
    foreign.namespaces.add(ns)
    cluster.core.create_namespaced_config_map(ns, {"metadata": {"name": "orders-script"},
                                                   "data": {"orders.js": EXAMPLE_SCRIPT.read_text()}})
    cluster.core.create_namespaced_secret(ns, {"metadata": {"name": ENDPOINT_SECRET}, "type": "Opaque",
                                               "data": {"ORDERS_URL": base64.b64encode(foreign.url.encode()).decode()}})

    def system_under_test(**spec: Any) -> None:
        document = foreign_system("orders", ns, drained={"ledgerComplete": True}, **spec)
        cluster.custom.create_namespaced_custom_object(API_GROUP, API_VERSION, ns, SUT_PLURAL, document)

    return {"settings": {**env["settings"], "ELVES_RUNNER_ENV_SECRETS": json.dumps({ns: [ENDPOINT_SECRET]})},
            "system_under_test": system_under_test}


def orders_loadtest(**spec: Any) -> dict[str, Any]:
    """A LoadTest of the SystemUnderTest orders with the example's script, as in orders.yaml."""
    return {"target": {"systemUnderTest": "orders"},
            "load": {"script": {"configMap": {"name": "orders-script", "file": "orders.js"}},
                     "rate": "240/min", "duration": "6s", "mix": {"placeOrder": 1}},
            "runner": {"envFromSecrets": [ENDPOINT_SECRET]},
            "drain": {"timeout": "90s"}, **spec}


def elves_generations(cluster: Cluster, system: str) -> dict[str, int]:
    """The generation of each of Elves' Deployments: a test of another system leaves them as they were."""
    return {d: cluster.deployment(system, d)["metadata"]["generation"] for d in DEPLOYMENTS}


def refused(cluster: Cluster, ns: str, name: str) -> tuple[dict[str, Any], str]:
    """The status of a LoadTest the operator refused before it started (Error, InvalidSpec), and why."""
    status = wait_for(phase_is(cluster, ns, name, "Error"), "the Error phase")
    error, = [c for c in status["conditions"] if c["type"] == "HarnessError"]
    assert error["reason"] == "InvalidSpec", error
    return status, error["message"]


def run_to_a_verdict(cluster: Cluster, ns: str, name: str, tmp_path: Path, before_finish: Callable[[], Any] = lambda: None,
                     controllers: Callable[[], Any] = lambda: None) -> dict[str, Any]:
    """Play k6-operator for run 0 of LoadTest `name`: its stages, its runner's k6 (the user's
    script from the user's ConfigMap); the LoadTest's status once it has a verdict. `before_finish`
    runs once k6 has ended, before the TestRun says so; `controllers` at every look after it (the
    workload controllers' and kubelet's part: no pod runs here)."""
    testrun_name = f"elves-{name}-0"
    try:
        testrun = wait_for(lambda: cluster.testrun(ns, testrun_name), "the LoadTest's TestRun")
    except AssertionError as error:  # say where the LoadTest is instead
        raise AssertionError(f"{error}; LoadTest status: {cluster.status(ns, name)}") from None
    # The user's ConfigMap and key, as they are.
    assert testrun["spec"]["script"] == {"configMap": {"name": "orders-script", "file": "orders.js"}}
    assert testrun["spec"]["runner"]["envFrom"] == [{"secretRef": {"name": ENDPOINT_SECRET}}]
    script = cluster.configmap(ns, "orders-script")["data"]["orders.js"].encode()
    cluster.walk_stages(ns, testrun_name, *STAGES_BEFORE_START, "started")
    wait_for(lambda: cluster.status(ns, name)["runs"][0].get("loadStartedAt"), "the load clock to start")
    k6 = run_runner(testrun, script, tmp_path / "runner-0", cluster.secret(ns, f"{testrun_name}-runner"),
                    env_from={ENDPOINT_SECRET: cluster.secret(ns, ENDPOINT_SECRET)})
    assert k6.returncode == 0, k6.stderr[-3000:]
    before_finish()
    cluster.walk_stages(ns, testrun_name, "stopped", "finished")
    final = phase_is(cluster, ns, name, *FINAL_PHASES)
    return wait_for(lambda: (controllers(), final())[1], "a verdict", timeout=150)


def test_a_loadtest_of_another_system_drains_its_queue_and_counts_its_ledger_to_a_pass(
        cluster, env, orders, foreign, stand_in, monkeypatch, caplog, tmp_path):
    ns, name = env["namespace"], "orders-steady"
    test_id = f"{ns}/{name}/0"
    orders["system_under_test"]()
    with operator(monkeypatch, caplog, ns, orders["settings"]) as runner:
        cluster.create_loadtest(ns, name, orders_loadtest())
        status = run_to_a_verdict(cluster, ns, name, tmp_path)
        assert status["phase"] == "Succeeded", status["conditions"]
        phases = [f"run 0: {p}" for p in ("Preparing", "Running", "Draining", "Analyzing")]
        wait_for(lambda: sorted(events_with(cluster, ns, name, "Phase")) == sorted(phases), "an Event per phase")
        # The counts ledger: k6's 2xx of endpoint placeOrder against the orders the worker stored
        # (orders_saved_total for this test id), both every order the service accepted.
        ledger = status["results"]["ledger"]
        assert ledger["kind"] == "counts"
        assert ledger["acceptedCounted"] == "k6's 2xx answers of endpoint placeOrder"
        assert ledger["requestsAccepted"] == ledger["requestsPersisted"] == foreign.orders(test_id) > 0
        assert ledger["lostRequests"] == 0 and ledger.get("surplus", 0) == 0
        assert status["verdict"]["passed"] is True
        assert all(check["ok"] for check in status["verdict"]["checks"]), status["verdict"]["checks"]
        # The drain waited on the target's queue in the LoadTest's namespace: it held the orders
        # not yet stored, and ended empty; the queue of that name in DECOY_NAMESPACE, 500 deep,
        # was never read.
        queue = status["results"]["queues"][ForeignSystemStandIn.QUEUE]
        assert 0 < queue["max"] < 500 and queue["final"] == 0, queue
        assert status["runs"][0]["drainedAt"]
        # Elves' registry was never asked for a ledger.
        assert test_id not in stand_in.ledger_asked
        assert wait_for(lambda: cluster.testrun(ns, f"elves-{name}-0") is None, "the finished run's TestRun to go")
        assert cluster.lock_holder(env["system"]) == ""
    assert runner.exit_code == 0
    assert runner.exception is None


def test_a_ledger_that_accepted_nothing_could_not_be_checked_and_the_loadtest_fails(
        cluster, env, orders, foreign, stand_in, monkeypatch, caplog, tmp_path):
    ns, name = env["namespace"], "orders-unchecked"
    test_id = f"{ns}/{name}/0"
    # Accepted counts an endpoint tag no request of the script has: k6 saw no 2xx of it.
    orders["system_under_test"](ledger={"accepted": {"endpoint": "noSuchEndpoint"},
                                        "persisted": {"promql": PERSISTED}})
    with operator(monkeypatch, caplog, ns, orders["settings"]) as runner:
        cluster.create_loadtest(ns, name, orders_loadtest())
        status = run_to_a_verdict(cluster, ns, name, tmp_path)
        assert status["phase"] == "Failed", status["conditions"]
        assert foreign.orders(test_id) > 0  # the orders went in; the ledger just counted none of them
        ledger = status["results"]["ledger"]
        assert (ledger["kind"], ledger["requestsAccepted"]) == ("counts", 0)
        assert status["verdict"]["passed"] is False
        failed = {c["name"]: c for c in status["verdict"]["checks"] if not c["ok"]}
        assert set(failed) == {"lost_requests"}, status["verdict"]["checks"]
        assert failed["lost_requests"]["detail"] == ("the ledger could not be checked: nothing was accepted "
                                                     "(k6's 2xx answers of endpoint noSuchEndpoint: 0)")
        assert test_id not in stand_in.ledger_asked
    assert runner.exit_code == 0
    assert runner.exception is None


def test_a_fault_against_another_system_is_refused_naming_the_field_before_anything_changes(
        cluster, env, orders, monkeypatch, caplog):
    ns, system, name = env["namespace"], env["system"], "orders-faulty"
    orders["system_under_test"]()
    before = elves_generations(cluster, system)
    spec = orders_loadtest(faults=[{"at": "3s", "killPod": {"deployment": "gateway"}}])
    with operator(monkeypatch, caplog, ns, orders["settings"]) as runner:
        cluster.create_loadtest(ns, name, spec)
        status, message = refused(cluster, ns, name)
        assert message.startswith(
            f"spec.faults[0]: acts on Elves' own deployments, not on the workloads of SystemUnderTest {ns}/orders"
        ), message
        # Nothing changed: no snapshot taken, no TestRun, the lock free, Elves' deployments as they were.
        assert status.get("snapshot") is None
        assert cluster.testrun(ns, f"elves-{name}-0") is None
        assert cluster.lock_holder(system) == ""
        assert elves_generations(cluster, system) == before
    assert runner.exit_code == 0
    assert runner.exception is None


def test_an_objective_naming_a_workload_the_target_does_not_list_is_refused_before_anything_changes(
        cluster, env, orders, monkeypatch, caplog):
    ns, name = env["namespace"], "orders-typo"
    orders["system_under_test"]()
    spec = orders_loadtest(slo=[{"metric": "pod_restarts", "workload": "orders-api", "op": "==", "value": 0},
                                {"metric": "unready_seconds", "workload": "orders-wrker", "op": "<", "value": "30s"}])
    with operator(monkeypatch, caplog, ns, orders["settings"]) as runner:
        cluster.create_loadtest(ns, name, spec)
        status, message = refused(cluster, ns, name)
        assert message == (f"spec.slo[1].workload: 'orders-wrker' is not a workload SystemUnderTest {ns}/orders"
                           " lists by name (it lists orders-api, orders-db)"), message
        assert status.get("snapshot") is None and cluster.testrun(ns, f"elves-{name}-0") is None
        assert cluster.lock_holder(ns) == ""
    assert runner.exit_code == 0
    assert runner.exception is None


def test_a_target_edited_while_the_test_runs_ends_it_in_error_and_the_system_is_restored(
        cluster, env, orders, monkeypatch, caplog):
    ns, system, name = env["namespace"], env["system"], "orders-edited"
    orders["system_under_test"]()
    with operator(monkeypatch, caplog, ns, orders["settings"]) as runner:
        cluster.create_loadtest(ns, name, orders_loadtest())
        # Pinned once the test took the system (the TestRun comes after that).
        pin = wait_for(lambda: cluster.status(ns, name).get("target"), "the pinned target")
        assert (pin["namespace"], pin["name"], pin["generation"]) == (ns, "orders", 1)
        # The drain would now wait on another queue than the test started with.
        cluster.custom.patch_namespaced_custom_object(API_GROUP, API_VERSION, ns, SUT_PLURAL, "orders",
                                                      {"spec": {"queues": {"rabbitmq": ["orders.other"]}}})
        status = wait_for(phase_is(cluster, ns, name, "Error"), "the Error phase")
        error, = [c for c in status["conditions"] if c["type"] == "HarnessError"]
        assert error["reason"] == "InvalidSpec"
        assert error["message"].startswith(
            f"spec.target.systemUnderTest: SystemUnderTest {ns}/orders was edited (generation 1 -> 2) while the test"
            " ran"), error["message"]
        assert status["restored"] is True
        assert cluster.lock_holder(system) == ""
    assert runner.exit_code == 0
    assert runner.exception is None


def test_faults_act_on_the_targets_listed_workloads_and_their_replicas_are_restored(
        cluster, env, orders, foreign, monkeypatch, caplog, tmp_path):
    """killPod, scale and restart naming a workload of the SystemUnderTest (spec.faults[].*.workload):
    in the target's namespace, on the workloads it lists by name only, where the chart allows
    (ELVES_TARGET_NAMESPACES); the scaled replicas are put back after the verdict, Elves' own
    deployments untouched."""
    ns, system, name = env["namespace"], env["system"], "orders-faults"
    labels = {"app": "orders-worker"}
    for workload in ("orders-api", "orders-worker"):
        selector = {"app": workload}
        cluster.apps.create_namespaced_deployment(ns, {"metadata": {"name": workload}, "spec": {
            "replicas": 2, "selector": {"matchLabels": selector}, "template": {
                "metadata": {"labels": selector}, "spec": {"containers": [{"name": "app", "image": "shop:test"}]}}}})
        cluster.make_ready(ns, workload)  # the target's readiness is awaited where the chart lets it read

    def controllers() -> None:  # the scale and the restart rolled out, as the controllers would
        for workload in ("orders-api", "orders-worker"):
            cluster.make_ready(ns, workload)

    cluster.pod(ns, "orders-worker-7c9d-aaaaa", labels, phase="Running")
    orders["system_under_test"](workloads=[{"name": "orders-api"}, {"name": "orders-worker"}])
    elves_before = elves_generations(cluster, system)
    spec = orders_loadtest(faults=[{"at": "1s", "killPod": {"workload": "orders-worker"}},
                                   {"at": "1s", "scale": {"workload": "orders-api", "replicas": 0}},
                                   {"at": "2s", "restart": {"workload": "orders-worker"}}])
    settings = {**orders["settings"], "ELVES_TARGET_NAMESPACES": ns}
    with operator(monkeypatch, caplog, ns, settings) as runner:
        cluster.create_loadtest(ns, name, spec)
        status = run_to_a_verdict(cluster, ns, name, tmp_path, controllers=controllers)
        assert status["phase"] == "Succeeded", status["conditions"]
        messages = [f["message"] for f in status["runs"][0]["faults"]]
        assert messages == [
            f"deleted pod orders-worker-7c9d-aaaaa of Deployment orders-worker in namespace {ns} at once; its"
            " controller starts another",
            f"scaled Deployment orders-api in namespace {ns} from 2 to 0 replicas",
            f"rollout restart of Deployment orders-worker in namespace {ns}"]
        assert "orders-worker-7c9d-aaaaa" not in cluster.pod_names(ns)
        worker = cluster.deployment(ns, "orders-worker")["spec"]["template"]["metadata"]
        assert "kubectl.kubernetes.io/restartedAt" in worker["annotations"]
        # The snapshot held the target's replicas; the restore put them back.
        assert status["snapshot"]["workloads"] == {"orders-api": {"kind": "Deployment", "replicas": 2},
                                                   "orders-worker": {"kind": "Deployment", "replicas": 2}}
        assert wait_for(lambda: cluster.deployment(ns, "orders-api")["spec"]["replicas"] == 2,
                        "orders-api's replicas restored")
        assert elves_generations(cluster, system) == elves_before
    assert runner.exit_code == 0
    assert runner.exception is None


def test_a_workload_fault_where_the_chart_does_not_allow_it_is_refused_before_anything_changes(
        cluster, env, orders, monkeypatch, caplog):
    ns, name = env["namespace"], "orders-not-allowed"
    orders["system_under_test"](workloads=[{"name": "orders-worker"}])
    spec = orders_loadtest(faults=[{"at": "1s", "killPod": {"workload": "orders-worker"}}])
    with operator(monkeypatch, caplog, ns, orders["settings"]) as runner:  # no ELVES_TARGET_NAMESPACES
        cluster.create_loadtest(ns, name, spec)
        status = wait_for(phase_is(cluster, ns, name, "Error"), "the Error phase")
        error, = [c for c in status["conditions"] if c["type"] == "HarnessError"]
        assert error["message"] == (f"spec.faults[0].killPod.workload: the operator may not act on workloads in"
                                    f" namespace {ns} (the chart's operator.targetNamespaces lists where it may)")
        assert status.get("snapshot") is None
    assert runner.exit_code == 0
    assert runner.exception is None


def test_a_reset_through_the_counts_secret_is_refused_before_anything_runs(cluster, env, orders, monkeypatch, caplog):
    """The count's Secret is a read-only role's login: a SystemUnderTest whose reset names it (its
    statements could take that login over) ends its LoadTest in Error naming the field, though the
    chart grants that Secret to this SystemUnderTest for its count."""
    ns, name = env["namespace"], "orders-reset-as-reader"
    count = {"secretRef": {"name": "orders-ledger-db", "key": "url"},
             "query": "SELECT count(*) FROM orders WHERE test_id = $TEST_ID"}
    orders["system_under_test"](ledger={"accepted": {"endpoint": "placeOrder"}, "persisted": {"sql": count}},
                                reset={"sql": {"secretRef": {"name": "orders-ledger-db", "key": "url"},
                                               "statements": ["ALTER ROLE CURRENT_USER PASSWORD 'taken'"]}})
    settings = {**orders["settings"], "ELVES_SQL_SECRETS": json.dumps({ns: {"count": {"orders-ledger-db": ["orders"]}}})}
    with operator(monkeypatch, caplog, ns, settings) as runner:
        cluster.create_loadtest(ns, name, orders_loadtest(reset=True))
        status = wait_for(phase_is(cluster, ns, name, "Error"), "the Error phase")
        error, = [c for c in status["conditions"] if c["type"] == "HarnessError"]
        assert (error["reason"], error["message"]) == ("InvalidSpec", (
            f"spec.target.systemUnderTest: SystemUnderTest {ns}/orders's spec.reset.sql.secretRef: SystemUnderTest"
            f" orders may not use Secret {ns}/orders-ledger-db for its reset: it is listed for the count"
            f" (operator.sqlSecrets.{ns}.count), not the reset: a Secret serves one purpose"))
        assert status.get("snapshot") is None and cluster.testrun(ns, f"elves-{name}-0") is None
    assert runner.exit_code == 0
    assert runner.exception is None


def test_spec_system_sets_the_targets_replicas_env_and_limits_and_the_restore_puts_them_back(
        cluster, env, orders, foreign, monkeypatch, caplog, tmp_path):
    """spec.system of another system's workloads (what its SystemUnderTest's settings offer): the
    worker's container `worker` (its settings.container) gets the env variable and the memory
    limit, its replicas are scaled; the sealed snapshot keeps them as they were, and the restore
    after the verdict puts env, limits and replicas back. Elves' own deployments untouched."""
    ns, system, name = env["namespace"], env["system"], "orders-settings"
    worker = {"name": "worker", "image": "shop:test", "env": [{"name": "WORKER_CONCURRENCY", "value": "1"},
                                                              {"name": "QUEUE", "value": "orders.in"}],
              "resources": {"requests": {"memory": "512Mi"}, "limits": {"memory": "1Gi"}}}
    for workload, containers in (("orders-api", [{"name": "app", "image": "shop:test"}]),
                                 ("orders-worker", [worker, {"name": "sidecar", "image": "proxy:test"}])):
        selector = {"app": workload}
        cluster.apps.create_namespaced_deployment(ns, {"metadata": {"name": workload}, "spec": {
            "replicas": 1, "selector": {"matchLabels": selector}, "template": {
                "metadata": {"labels": selector}, "spec": {"containers": containers}}}})
    orders["system_under_test"](workloads=[
        {"name": "orders-api"},
        {"name": "orders-worker", "settings": {"env": ["WORKER_CONCURRENCY"], "resources": True, "container": "worker"}}])
    before = {w: cluster.deployment(ns, w)["spec"] for w in ("orders-api", "orders-worker")}
    elves_before = elves_generations(cluster, system)
    spec = orders_loadtest(system={"replicas": {"orders-worker": 3, "orders-api": 2},
                                   "env": {"orders-worker": {"WORKER_CONCURRENCY": "4"}},
                                   "resources": {"orders-worker": {"memory": "256Mi"}}})
    settings = {**orders["settings"], "ELVES_TARGET_NAMESPACES": ns}

    def controllers() -> None:
        for workload in ("orders-api", "orders-worker"):
            cluster.make_ready(ns, workload)

    with operator(monkeypatch, caplog, ns, settings) as runner:
        cluster.create_loadtest(ns, name, spec)
        # Applied before the load starts (the TestRun comes after the system is set and the
        # workloads, at their new replicas, are ready: reported here as the controllers would).
        wait_for(lambda: (controllers(), cluster.testrun(ns, f"elves-{name}-0"))[1], "the run's TestRun")
        during = cluster.deployment(ns, "orders-worker")["spec"]
        container, sidecar = during["template"]["spec"]["containers"]
        assert during["replicas"] == 3 and cluster.deployment(ns, "orders-api")["spec"]["replicas"] == 2
        assert container["env"] == [{"name": "WORKER_CONCURRENCY", "value": "4"}, {"name": "QUEUE", "value": "orders.in"}]
        # The limit set, the request above it brought down to it; the other container untouched.
        assert container["resources"] == {"requests": {"memory": "256Mi"}, "limits": {"memory": "256Mi"}}
        assert sidecar == before["orders-worker"]["template"]["spec"]["containers"][1]
        snapshot = cluster.status(ns, name)["snapshot"]
        assert snapshot["workloads"]["orders-worker"] == {
            "kind": "Deployment", "replicas": 1, "container": "worker", "env": worker["env"],
            "resources": worker["resources"]}
        assert snapshot["workloads"]["orders-api"] == {"kind": "Deployment", "replicas": 1}
        status = run_to_a_verdict(cluster, ns, name, tmp_path, controllers=controllers)
        assert status["phase"] == "Succeeded", status["conditions"]
        wait_for(lambda: cluster.status(ns, name).get("restored"), "the system restored")
        after = {w: cluster.deployment(ns, w)["spec"] for w in ("orders-api", "orders-worker")}
        assert after["orders-worker"]["template"]["spec"]["containers"] == \
            before["orders-worker"]["template"]["spec"]["containers"]
        assert {w: s["replicas"] for w, s in after.items()} == {"orders-api": 1, "orders-worker": 1}
        assert elves_generations(cluster, system) == elves_before
    assert runner.exit_code == 0
    assert runner.exception is None


def test_a_setting_the_target_does_not_offer_is_refused_before_anything_changes(
        cluster, env, orders, monkeypatch, caplog):
    ns, name = env["namespace"], "orders-not-offered"
    orders["system_under_test"](workloads=[{"name": "orders-worker", "settings": {"env": ["WORKER_CONCURRENCY"]}}])
    spec = orders_loadtest(system={"env": {"orders-worker": {"DATABASE_URL": "postgresql://elsewhere/db"}}},
                           sweep={"system.resources.orders-worker.memory": ["128Mi", "256Mi"]})
    with operator(monkeypatch, caplog, ns, {**orders["settings"], "ELVES_TARGET_NAMESPACES": ns}) as runner:
        cluster.create_loadtest(ns, name, spec)
        status, message = refused(cluster, ns, name)
        assert message == (
            f"spec.system.env.orders-worker.DATABASE_URL: DATABASE_URL is not a setting SystemUnderTest {ns}/orders"
            " offers for orders-worker (its settings.env: WORKER_CONCURRENCY); spec.sweep.system.resources.orders-worker"
            f".memory: SystemUnderTest {ns}/orders does not let a LoadTest set the resources of orders-worker (its"
            " workload's settings.resources is not true)"), message
        assert status.get("snapshot") is None and cluster.testrun(ns, f"elves-{name}-0") is None
    assert runner.exit_code == 0
    assert runner.exception is None
