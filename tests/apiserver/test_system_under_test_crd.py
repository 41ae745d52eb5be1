"""The SystemUnderTest CRD on a real kube-apiserver: the built-in system the chart ships and a
foreign system go in; a bad one comes back with a message that names the field, as `elves
validate` names it (tests/unit/engine/models/test_target.py). A LoadTest's spec.target too, and
the operator's read of it (elves.k8s.target) through the real client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from foreign_system import FOREIGN_SPEC, foreign_system
from kubernetes import config
from kubernetes.client.exceptions import ApiException

from elves.constants import WORK_QUEUES
from elves.engine.models.loadtest import parse_loadtest
from elves.engine.results.sql_count import SqlCountError
from elves.k8s.kube import Kube
from elves.k8s.names import Owner
from elves.k8s.platform import KubernetesPlatform
from elves.k8s.settings import OperatorSettings
from elves.k8s.target import resolve_target

from . import control_plane as cp
from .chart_rbac import install_operator_rbac

CRDS = cp.REPO / "charts" / "elves" / "crds"
BUILTIN_SYSTEM = cp.REPO / "charts" / "elves" / "files" / "system-under-test.yaml"
NAMESPACE = "sut-crd"

SQL = {"sql": {"secretRef": {"name": "orders-ledger-db", "key": "url"},
               "query": "SELECT count(*) FROM orders WHERE test_id = $TEST_ID"}}
RESET = {"sql": {"secretRef": {"name": "orders-reset-db", "key": "url"}, "statements": ["TRUNCATE orders"]}}
LEDGER_URL = "postgresql://reader:Pa55word@orders-db.sut-crd.svc:5432/orders?sslmode=require"


def sql_ledger(query: str | None = None, **sql: Any) -> dict[str, Any]:
    fields = {**SQL["sql"], **({"query": query} if query is not None else {}), **sql}
    return {"ledger": {"accepted": {"endpoint": "x"}, "persisted": {"sql": fields}}}


# spec fields replacing the foreign system's -> the field the error names, and what it says.
INVALID = [
    pytest.param({"workloads": []}, "spec.workloads", "should have at least 1 items", id="no-workloads"),
    pytest.param({"workloads": [{"name": "a", "selector": {"matchLabels": {"app": "a"}}}]},
                 "spec.workloads[0]", "set exactly one of name or selector", id="name-and-selector"),
    pytest.param({"workloads": [{"name": "a", "kind": "DaemonSet"}]}, "spec.workloads[0].kind", "Unsupported value",
                 id="daemonset"),
    pytest.param({"workloads": [{"name": "a"}, {"name": "a", "kind": "StatefulSet"}]}, "spec.workloads",
                 "each workload name appears once", id="named-twice"),
    pytest.param({"workloads": [{"name": "w", "autoscaler": {"cpu": {}, "kafka": {
        "group": "g", "topic": "t", "bootstrapServers": ["kafka:9092"]}}}]},
                 "spec.workloads[0].autoscaler", "set exactly one of rabbitmq, prometheus, kafka", id="two-triggers"),
    pytest.param({"workloads": [{"selector": {"matchLabels": {"app": "w"}}, "autoscaler": {"cpu": {}}}]},
                 "spec.workloads[0].autoscaler", "an autoscaler needs a workload listed by name",
                 id="autoscaler-by-selector"),
    pytest.param({"workloads": [{"name": "w", "autoscaler": {"kafka": {
        "group": "g", "topic": "t", "bootstrapServers": ["kafka"]}}}]},
                 "spec.workloads[0].autoscaler.kafka.bootstrapServers[0]", "should match", id="bootstrap-without-port"),
    pytest.param({"queues": {}}, "spec.queues", "set exactly one of rabbitmq", id="no-queues"),
    pytest.param({"queues": {"rabbitmq": ["bad queue"]}}, "spec.queues.rabbitmq[0]", "should match", id="queue-name"),
    pytest.param({"queues": {"rabbitmq": ["q"], "kafka": [{"group": "g", "topic": "t"}]}}, "spec.queues",
                 "set exactly one of rabbitmq (queue names), kafka", id="rabbitmq-and-kafka"),
    pytest.param({"queues": {"kafka": [{"group": "g"}]}}, "spec.queues.kafka[0].topic", "Required value",
                 id="kafka-without-topic"),
    pytest.param({"testIdHeader": "X Test"}, "spec.testIdHeader", "should match", id="header-name"),
    pytest.param({"ledger": {"registry": {}, "accepted": {"endpoint": "x"}}}, "spec.ledger",
                 "set either registry: {}", id="registry-and-counts"),
    pytest.param({"ledger": {"accepted": {"endpoint": "x"}, "persisted": {"promql": "sum(orders_saved_total)"}}},
                 "spec.ledger.persisted.promql", "use the $TEST_ID placeholder", id="persisted-not-scoped"),
    pytest.param({"ledger": {"accepted": {"endpoint": "x"}, "persisted": {}}}, "spec.ledger.persisted",
                 "set exactly one of promql", id="persisted-neither"),
    pytest.param({"ledger": {"accepted": {"endpoint": "x"}, "persisted": {"promql": 'sum(a{t="$TEST_ID"})', **SQL}}},
                 "spec.ledger.persisted", "set exactly one of promql", id="persisted-both"),
    pytest.param(sql_ledger("SELECT count(*) FROM orders"), "spec.ledger.persisted.sql.query",
                 "query must count this test's rows only", id="sql-not-scoped"),
    pytest.param(sql_ledger("SELECT count(*) FROM orders WHERE test_id = '$TEST_ID'"), "spec.ledger.persisted.sql.query",
                 "never as text", id="sql-quoted-placeholder"),
    pytest.param(sql_ledger("delete from orders where test_id = $TEST_ID"), "spec.ledger.persisted.sql.query",
                 "one statement that reads", id="sql-writes"),
    pytest.param(sql_ledger("SELECT count(*) FROM orders WHERE test_id = $TEST_ID;\n  DROP TABLE orders"),
                 "spec.ledger.persisted.sql.query", "one statement that reads", id="sql-two-statements"),
    pytest.param(sql_ledger(secretRef={"name": "orders-ledger-db"}), "spec.ledger.persisted.sql.secretRef.key",
                 "Required value", id="sql-secret-without-key"),
    pytest.param({"reset": {"sql": {**RESET["sql"], "statements": ["TRUNCATE orders; DROP TABLE audit"]}}},
                 "spec.reset.sql.statements", "each statement must be one statement", id="reset-two-in-one"),
    pytest.param({"reset": {"sql": {**RESET["sql"], "statements": ["TRUNCATE orders", "COMMIT"]}}},
                 "spec.reset.sql.statements", "no statement may begin, commit", id="reset-commit"),
    pytest.param({"reset": {"sql": {**RESET["sql"], "statements": []}}}, "spec.reset.sql.statements",
                 "should have at least 1 items", id="reset-nothing"),
]


def system_under_test(name: str, **spec: Any) -> str:
    return json.dumps(foreign_system(name, NAMESPACE, **spec))


@pytest.fixture(scope="module")
def crds(control_plane: cp.ControlPlane) -> None:
    """The chart's CRDs (both are generated from the engine's models), and a namespace."""
    control_plane.install_crds(*sorted(CRDS.glob("*.yaml")))
    control_plane.kubectl("create", "namespace", NAMESPACE)


def dry_run_apply(plane: cp.ControlPlane, manifest: str) -> Any:
    return plane.kubectl("apply", "--dry-run=server", "-f", "-", stdin=manifest, check=False)


def test_the_builtin_system_and_a_foreign_system_are_accepted(control_plane: cp.ControlPlane, crds: None) -> None:
    builtin = yaml.safe_load(BUILTIN_SYSTEM.read_text())
    result = dry_run_apply(control_plane, system_under_test("elves", **builtin["spec"]))
    assert result.returncode == 0, result.stderr
    control_plane.kubectl("apply", "-f", "-", stdin=system_under_test("orders"))
    stored = json.loads(control_plane.kubectl("get", "sut", "orders", "-n", NAMESPACE, "-o", "json").stdout)
    assert stored["spec"] == FOREIGN_SPEC
    # A persisted count by SQL; WITH first, lower case, a trailing semicolon.
    for query in (SQL["sql"]["query"], "with mine as (select * from orders where test_id = $TEST_ID) select count(*) from mine;"):
        result = dry_run_apply(control_plane, system_under_test("by-sql", **sql_ledger(query)))
        assert result.returncode == 0, result.stderr
    # A Kafka-fed worker: its queue is its consumer group's lag on a topic.
    lag = {"kafka": [{"group": "orders-worker", "topic": "orders.placed"}]}
    result = dry_run_apply(control_plane, system_under_test("by-lag", queues=lag))
    assert result.returncode == 0, result.stderr
    result = dry_run_apply(control_plane, system_under_test("resetting", reset=RESET))
    assert result.returncode == 0, result.stderr


def test_the_charts_rbac_lets_the_operator_get_the_listed_sql_secrets_and_nothing_more(
        control_plane: cp.ControlPlane, crds: None, tmp_path: Path) -> None:
    """operator.sqlSecrets as the chart renders it, on a real API server: the operator, as its
    ServiceAccount, reads the count's Secret for the SystemUnderTest it is granted to and no other
    Secret; a SystemUnderTest whose reset names the count's Secret (a read-only role's login the
    reset's statements could take over) is refused before anything runs, naming the field."""
    release = "sut-crd-release"
    control_plane.kubectl("create", "namespace", release)
    values = {"operator": {"loadTestNamespaces": [NAMESPACE],  # where it may read SystemUnderTests
                           "sqlSecrets": {NAMESPACE: {"count": {"orders-ledger-db": ["orders-sql"]},
                                                      "reset": {"orders-reset-db": ["orders-sql"]}}}}}
    operator_kubeconfig, chart_env = install_operator_rbac(control_plane, release, values, tmp_path)
    for name in ("orders-ledger-db", "orders-reset-db", "other-db"):
        control_plane.kubectl("create", "secret", "generic", name, "-n", NAMESPACE, f"--from-literal=url={LEDGER_URL}")
    control_plane.kubectl("create", "secret", "generic", "orders-ledger-db", "-n", release,
                          f"--from-literal=url={LEDGER_URL}")
    settings = OperatorSettings.from_env({"ELVES_SYSTEM_NAMESPACE": release,
                                          "ELVES_SQL_SECRETS": chart_env["ELVES_SQL_SECRETS"]})
    kube = Kube(config.new_client_from_config(config_file=str(operator_kubeconfig)))
    platform = KubernetesPlatform(settings, kube, Owner(NAMESPACE, "orders-steady", "uid-1"))
    platform.system_under_test = "orders-sql"
    assert platform.target_secret("orders-ledger-db", "url") == LEDGER_URL
    # Nothing more: another Secret of the namespace, listing or watching them, changing the one it
    # reads, the same name in another namespace.
    account = f"--as=system:serviceaccount:{release}:elves-operator"
    readable = {("get", "secret/orders-ledger-db", NAMESPACE), ("get", "secret/orders-reset-db", NAMESPACE)}
    can = {(verb, what, ns): control_plane.kubectl("auth", "can-i", verb, what, "-n", ns, account,
                                                   check=False).stdout.strip()
           for verb, what, ns in [*readable, ("get", "secret/other-db", NAMESPACE),
                                  ("list", "secrets", NAMESPACE), ("watch", "secrets", NAMESPACE),
                                  ("update", "secret/orders-ledger-db", NAMESPACE),
                                  ("delete", "secret/orders-ledger-db", NAMESPACE),
                                  ("get", "secret/orders-ledger-db", "default")]}
    assert can == {key: "yes" if key in readable else "no" for key in can}
    with pytest.raises(ApiException) as refused:
        kube.secret(NAMESPACE, "other-db")
    assert refused.value.status == 403
    # The count's Secret named for the reset: refused before any SQL runs, by the operator's read
    # of the real object.
    control_plane.kubectl("apply", "-f", "-", stdin=system_under_test("orders-sql", **sql_ledger(), reset={
        "sql": {**RESET["sql"], "secretRef": {"name": "orders-ledger-db", "key": "url"}}}))
    test = parse_loadtest({"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest", "metadata": {"name": "t"},
                           "spec": {"target": {"systemUnderTest": "orders-sql"}, "reset": True,
                                    "load": {"scenario": "system-mix", "rate": "60/min", "duration": "1m"}}}).spec
    _, problems, _ = resolve_target(kube, NAMESPACE, test, release, (), settings.sql_secrets)
    assert problems == ["spec.target.systemUnderTest: SystemUnderTest sut-crd/orders-sql's spec.reset.sql.secretRef:"
                        " SystemUnderTest orders-sql may not use Secret sut-crd/orders-ledger-db for its reset: it is"
                        " listed for the count (operator.sqlSecrets.sut-crd.count), not the reset: a Secret serves"
                        " one purpose"]
    with pytest.raises(SqlCountError, match="^spec.reset.sql.secretRef: SystemUnderTest orders-sql may not use"):
        platform.target_secret("orders-ledger-db", "url", "spec.reset.sql")


@pytest.mark.parametrize(("fields", "field", "says"), INVALID)
def test_a_bad_system_under_test_is_refused_naming_the_field(control_plane: cp.ControlPlane, crds: None,
                                                             fields: dict[str, Any], field: str, says: str) -> None:
    result = dry_run_apply(control_plane, system_under_test("bad", **fields))
    assert result.returncode != 0, f"accepted: {fields}"
    assert field in result.stderr and says in result.stderr, result.stderr


@pytest.mark.parametrize(("target", "ok"), [({"systemUnderTest": "orders"}, True), ({}, False),
                                            ({"systemUnderTest": "Orders"}, False)])
def test_a_loadtest_names_its_target(control_plane: cp.ControlPlane, crds: None, target: dict, ok: bool) -> None:
    manifest = json.dumps({"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest",
                           "metadata": {"name": "targeted", "namespace": NAMESPACE},
                           "spec": {"target": target,
                                    "load": {"scenario": "system-mix", "rate": "60/min", "duration": "1m"}}})
    result = dry_run_apply(control_plane, manifest)
    assert (result.returncode == 0) == ok, result.stderr
    if not ok:
        assert "spec.target.systemUnderTest" in result.stderr, result.stderr


def test_the_operator_reads_the_target_a_loadtest_names_and_falls_back_to_the_engines_builtin_system(
        control_plane: cp.ControlPlane, crds: None, kubeconfig: Path) -> None:
    """What elves.k8s.target does on a real API server: a SystemUnderTest by name in the
    LoadTest's namespace; no built-in one in the system namespace, so the engine's built-in system."""
    control_plane.kubectl("apply", "-f", "-", stdin=system_under_test("read-by-name"))
    kube = Kube(config.new_client_from_config(config_file=str(kubeconfig)))

    def spec(**fields: Any):
        return parse_loadtest({"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest", "metadata": {"name": "t"},
                               "spec": {"load": {"scenario": "system-mix", "rate": "60/min", "duration": "1m"},
                                        **fields}}).spec

    target, problems, _ = resolve_target(kube, NAMESPACE, spec(target={"systemUnderTest": "read-by-name"}), "elves")
    assert problems == [] and target.queues.rabbitmq == ["orders.in"]
    target, problems, _ = resolve_target(kube, NAMESPACE, spec(target={"systemUnderTest": "absent"}), "elves")
    assert target is None and problems[0].startswith("spec.target.systemUnderTest: there is no SystemUnderTest")
    target, problems, _ = resolve_target(kube, NAMESPACE, spec(), "no-such-namespace")
    assert problems == [] and target.queues.rabbitmq == list(WORK_QUEUES)
