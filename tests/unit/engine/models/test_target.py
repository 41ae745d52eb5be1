"""SystemUnderTest: the built-in system and a foreign system are accepted; a bad one is refused
naming the field, by the model (`elves validate`) and by the CRD's rules alike."""

from __future__ import annotations

import pytest
import yaml

from foreign_system import foreign_system

from elves.cli import main as elves_main
from elves.constants import DEPLOYMENTS, TEST_ID_HEADER, WORK_QUEUES
from elves.engine.models.crd import SYSTEM_UNDER_TEST, crd_manifest
from elves.engine.models.errors import SpecError
from elves.engine.models.target import builtin_system, parse_system_under_test

FOREIGN = foreign_system()


def test_the_builtin_system_is_elves_own_system_and_valid():
    sut = parse_system_under_test(builtin_system())
    assert sut.name == "elves"
    assert [(w.name, w.kind) for w in sut.spec.workloads] == [(d, "Deployment") for d in DEPLOYMENTS]
    assert sut.spec.queues.rabbitmq == list(WORK_QUEUES) and sut.spec.queues.promql is None
    assert sut.spec.ledger.registry is not None and sut.spec.ledger.accepted is None
    assert sut.spec.test_id_header == TEST_ID_HEADER and sut.spec.drained.ledger_complete is True


def test_a_foreign_system_is_read_with_defaults():
    spec = parse_system_under_test(foreign_system(testIdHeader=TEST_ID_HEADER, drained={})).spec
    assert [w.kind for w in spec.workloads] == ["Deployment", "StatefulSet", "Deployment"]
    assert spec.workloads[2].selector.match_labels == {"app.kubernetes.io/part-of": "orders"}
    assert spec.ledger.accepted.endpoint == "placeOrder" and spec.drained.ledger_complete is True
    by_promql = parse_system_under_test(foreign_system(
        queues={"promql": "sum by (queue) (my_queue_depth)"},
        ledger={"accepted": {"promql": 'sum(k6_http_reqs_total{testid="$TEST_ID", status="201"})'},
                "persisted": {"promql": 'sum(saved_total{test="$TEST_ID"})'}})).spec
    assert by_promql.queues.promql and by_promql.ledger.accepted.promql
    by_lag = parse_system_under_test(foreign_system(queues={"kafka": [{"group": "orders-worker", "topic": "orders.placed"}]}))
    assert by_lag.spec.queues.kafka_pairs() == [("orders-worker", "orders.placed")]
    by_sql = parse_system_under_test(foreign_system(ledger={"accepted": {"endpoint": "placeOrder"}, "persisted": SQL})).spec
    sql = by_sql.ledger.persisted.sql
    assert (sql.secret_ref.name, sql.secret_ref.key, sql.query) == ("orders-ledger-db", "url", SQL["sql"]["query"])
    assert by_sql.ledger.persisted.promql is None and by_sql.reset is None
    resetting = parse_system_under_test(foreign_system(reset=RESET)).spec
    assert resetting.reset.sql.statements == ["TRUNCATE orders", "DELETE FROM audit WHERE source = 'load';"]


RESET = {"sql": {"secretRef": {"name": "orders-reset-db", "key": "url"},
                 "statements": ["TRUNCATE orders", "DELETE FROM audit WHERE source = 'load';"]}}


SQL = {"sql": {"secretRef": {"name": "orders-ledger-db", "key": "url"},
               "query": "SELECT count(*) FROM orders WHERE test_id = $TEST_ID"}}


def sql_ledger(query: str | None = None, **sql: object) -> dict:
    """A counts ledger whose persisted count is SQL, with its query or other fields replaced."""
    fields = {**SQL["sql"], **({"query": query} if query is not None else {}), **sql}
    return {"ledger": {"accepted": {"endpoint": "x"}, "persisted": {"sql": fields}}}


@pytest.mark.parametrize("spec, named", [
    ({"workloads": []}, "spec.workloads: List should have at least 1 item"),
    ({"workloads": [{"name": "a", "selector": {"matchLabels": {"app": "a"}}}]},
     "spec.workloads[0]: set exactly one of name or selector"),
    ({"workloads": [{"name": "a", "kind": "DaemonSet"}]}, "spec.workloads[0].kind"),
    ({"workloads": [{"name": "a"}, {"name": "a", "kind": "StatefulSet"}]},
     "spec.workloads: a is named more than once"),
    ({"queues": {}}, "spec.queues: set exactly one of rabbitmq"),
    ({"queues": {"rabbitmq": ["q"], "promql": "up"}}, "spec.queues: set exactly one of rabbitmq"),
    ({"queues": {"rabbitmq": ["bad queue"]}}, "spec.queues.rabbitmq[0]: String should match pattern"),
    ({"queues": {"rabbitmq": ["q"], "kafka": [{"group": "g", "topic": "t"}]}},
     "spec.queues: set exactly one of rabbitmq (queue names), kafka (consumer groups and topics) or promql"),
    ({"queues": {"kafka": []}}, "spec.queues.kafka: List should have at least 1 item"),
    ({"queues": {"kafka": [{"group": "g"}]}}, "spec.queues.kafka[0].topic: required field"),
    ({"queues": {"kafka": [{"group": "g", "topic": 'orders"} or up{x="'}]}},
     "spec.queues.kafka[0].topic: String should match pattern"),
    ({"testIdHeader": "X Test"}, "spec.testIdHeader"),
    ({"ledger": {"registry": {}, "accepted": {"endpoint": "x"}}}, "spec.ledger: set either registry: {}"),
    ({"ledger": {"accepted": {"endpoint": "x"}}}, "spec.ledger: set either registry: {}"),
    ({"ledger": {"accepted": {"endpoint": "x", "promql": "sum(a)"},
                 "persisted": {"promql": 'sum(b{t="$TEST_ID"})'}}},
     "spec.ledger.accepted: set exactly one of endpoint"),
    ({"ledger": {"accepted": {"endpoint": "x"}, "persisted": {"promql": "sum(orders_saved_total)"}}},
     "spec.ledger.persisted: promql must count this test's traffic only: use the $TEST_ID placeholder"),
    ({"ledger": {"registry": {"url": "http://x"}}}, "spec.ledger.registry.url: unknown field"),
    ({"ledger": {"accepted": {"endpoint": "x"}, "persisted": {}}}, "spec.ledger.persisted: set exactly one of promql"),
    ({"ledger": {"accepted": {"endpoint": "x"}, "persisted": {"promql": 'sum(b{t="$TEST_ID"})', **SQL}}},
     "spec.ledger.persisted: set exactly one of promql"),
    (sql_ledger("SELECT count(*) FROM orders"), "spec.ledger.persisted.sql.query: query must count this test's rows"),
    (sql_ledger("SELECT count(*) FROM orders WHERE test_id = '$TEST_ID'"),
     "spec.ledger.persisted.sql.query: query binds $TEST_ID as a parameter, never as text"),
    (sql_ledger("DELETE FROM orders WHERE test_id = $TEST_ID"),
     "spec.ledger.persisted.sql.query: query must be one statement that reads"),
    (sql_ledger("SELECT count(*) FROM orders WHERE test_id = $TEST_ID; DROP TABLE orders"),
     "spec.ledger.persisted.sql.query: query must be one statement that reads"),
    (sql_ledger("selection = $TEST_ID"), "spec.ledger.persisted.sql.query: query must be one statement that reads"),
    (sql_ledger(secretRef={"name": "orders-ledger-db"}), "spec.ledger.persisted.sql.secretRef.key: required field"),
    (sql_ledger(secretRef={"name": "Orders", "key": "url"}), "spec.ledger.persisted.sql.secretRef.name: String should"),
    (sql_ledger(secretRef={"name": "db", "key": "a/b"}), "spec.ledger.persisted.sql.secretRef.key: String should"),
    (sql_ledger(url="postgresql://x"), "spec.ledger.persisted.sql.url: unknown field"),
    ({"reset": True}, "spec.reset: Input should be a valid dictionary"),
    ({"reset": {"sql": {"secretRef": {"name": "orders-reset-db", "key": "url"}, "statements": []}}},
     "spec.reset.sql.statements: List should have at least 1 item"),
    ({"reset": {"sql": {"secretRef": {"name": "orders-reset-db", "key": "url"},
                        "statements": ["TRUNCATE orders;", "DELETE FROM audit; DROP TABLE orders"]}}},
     "spec.reset.sql.statements: each statement must be one statement"),
    ({"reset": {"sql": {"statements": ["TRUNCATE orders"]}}}, "spec.reset.sql.secretRef: required field"),
    # A COMMIT in the middle would make the steps before it stick when a later one fails.
    ({"reset": {"sql": {"secretRef": {"name": "orders-reset-db", "key": "url"},
                        "statements": ["TRUNCATE orders", "commit", "DELETE FROM audit"]}}},
     "spec.reset.sql.statements: no statement may begin, commit, roll back or save a transaction"),
    ({"reset": {"sql": {"secretRef": {"name": "orders-reset-db", "key": "url"},
                        "statements": ["  ROLLBACK;"]}}},
     "spec.reset.sql.statements: no statement may begin, commit, roll back or save a transaction"),
])
def test_a_bad_system_under_test_is_refused_naming_the_field(spec, named):
    with pytest.raises(SpecError) as error:
        parse_system_under_test(foreign_system(**spec), "orders.yaml")
    assert "orders.yaml: invalid SystemUnderTest" in str(error.value)
    assert any(line.startswith(named) for line in error.value.problems), error.value.problems


def test_elves_validate_reads_each_document_by_its_kind(tmp_path, capsys):
    good = tmp_path / "system.yaml"
    good.write_text(yaml.safe_dump_all([builtin_system(), FOREIGN]))
    assert elves_main(["validate", str(good)]) == 0
    assert capsys.readouterr().out == f"ok {good} (elves, orders)\n"
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(foreign_system(queues={})))
    assert elves_main(["validate", str(bad)]) == 1
    assert "spec.queues: set exactly one of rabbitmq" in capsys.readouterr().err


def test_the_crd_states_the_same_rules_on_the_same_fields():
    spec = crd_manifest(SYSTEM_UNDER_TEST)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["required"] == ["workloads", "queues", "ledger"]
    assert [r["fieldPath"] for r in spec["x-kubernetes-validations"]] == [".workloads"]
    workload = spec["properties"]["workloads"]["items"]
    assert workload["x-kubernetes-validations"][0]["rule"] == "has(self.name) != has(self.selector)"
    assert workload["properties"]["kind"]["enum"] == ["Deployment", "StatefulSet"]
    queues = spec["properties"]["queues"]
    assert queues["x-kubernetes-validations"][0]["rule"] == \
        "(has(self.rabbitmq) ? 1 : 0) + (has(self.kafka) ? 1 : 0) + (has(self.promql) ? 1 : 0) == 1"
    assert queues["properties"]["kafka"]["items"]["required"] == ["group", "topic"]
    ledger = spec["properties"]["ledger"]
    assert ledger["x-kubernetes-validations"][0]["message"].startswith("set either registry: {}")
    persisted = ledger["properties"]["persisted"]["x-kubernetes-validations"]
    assert [(r.get("fieldPath"), "$TEST_ID" in r["rule"]) for r in persisted] == [(None, False), (".promql", True)]
    assert persisted[0]["rule"] == "has(self.promql) != has(self.sql)"
    sql = ledger["properties"]["persisted"]["properties"]["sql"]
    assert sql["required"] == ["secretRef", "query"]
    assert [r["fieldPath"] for r in sql["x-kubernetes-validations"]] == [".query"] * 3
    assert ledger["properties"]["registry"] == {
        "description": "Elves' own ledger: the registry's /api/v1/ledger (the built-in system's).",
        "type": "object", "nullable": True, "properties": {}}


def test_a_loadtest_names_its_target_or_judges_the_builtin_one(make_loadtest):
    assert make_loadtest().spec.system_under_test == "elves" and make_loadtest().spec.target is None
    assert make_loadtest(target={"systemUnderTest": "orders"}).spec.system_under_test == "orders"


@pytest.mark.parametrize("target, named", [
    ({}, "spec.target.systemUnderTest: required field is missing"),
    ({"systemUnderTest": "Orders"}, "spec.target.systemUnderTest: String should match pattern"),
    ({"systemUnderTest": "orders", "namespace": "shop"}, "spec.target.namespace: unknown field"),
])
def test_a_bad_target_is_refused_naming_the_field(make_loadtest, target, named):
    with pytest.raises(SpecError) as error:
        make_loadtest(target=target)
    assert any(line.startswith(named) for line in error.value.problems), error.value.problems


def test_the_loadtest_crd_states_the_target():
    spec = crd_manifest()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    target = spec["properties"]["target"]
    assert target["required"] == ["systemUnderTest"]
    assert target["properties"]["systemUnderTest"]["pattern"].startswith("^[a-z0-9]")
    assert "load" in spec["required"] and "target" not in spec["required"]
