"""A SystemUnderTest's SQL on a cluster (issues 25.1 and 33.1): the operator reads a database URL
only from a Secret the chart's operator.sqlSecrets grants, in the LoadTest's namespace, for that
purpose (the count's read-only role, or the reset's) and to that SystemUnderTest by name; a test
whose SystemUnderTest names another is refused before it starts, naming the field and the value;
a Secret that is missing, unreadable or without the key is an error naming secretRef, and its
value shows in no message."""

from __future__ import annotations

import base64
import copy
import json

import pytest
from kubernetes.client.exceptions import ApiException
from test_k8s_target import TargetsKube, spec

from elves.engine.results.sql_count import SqlCountError
from elves.k8s.names import Owner
from elves.k8s.platform import KubernetesPlatform
from elves.k8s.settings import OperatorSettings
from elves.k8s.sql_secrets import SqlSecrets
from elves.k8s.target import resolve_target

URL = "postgresql://reader:Pa55word@orders-db.shop.svc:5432/orders?sslmode=require"
COUNT, RESET = "spec.ledger.persisted.sql", "spec.reset.sql"
ORDERS = {"apiVersion": "elves.dev/v1alpha1", "kind": "SystemUnderTest", "metadata": {"name": "orders"},
          "spec": {"workloads": [{"name": "orders-api"}], "queues": {"rabbitmq": ["orders.in"]},
                   "ledger": {"accepted": {"endpoint": "placeOrder"},
                              "persisted": {"sql": {"secretRef": {"name": "orders-ledger-db", "key": "url"},
                                                    "query": "SELECT count(*) FROM orders WHERE test_id = $TEST_ID"}}}}}
RESETTING = copy.deepcopy(ORDERS)
RESETTING["spec"]["reset"] = {"sql": {"secretRef": {"name": "orders-reset-db", "key": "url"},
                                      "statements": ["TRUNCATE orders"]}}
GRANTS = {"shop": {"count": {"orders-ledger-db": ["orders"], "audit-db": ["audit"]},
                   "reset": {"orders-reset-db": ["orders"]}}}


def grants(value: dict = GRANTS) -> SqlSecrets:
    return SqlSecrets.of(value)


class SecretsKube:
    """Secrets by (namespace, name); `refuse`: the API server's answer to any read (403)."""

    def __init__(self, secrets: dict[tuple[str, str], dict[str, str]], refuse: int | None = None):
        self.secrets, self.refuse, self.read = secrets, refuse, []

    def secret(self, namespace: str, name: str) -> dict | None:
        self.read.append((namespace, name))
        if self.refuse:
            raise ApiException(status=self.refuse)
        data = self.secrets.get((namespace, name))
        return None if data is None else {"data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}


def platform(kube: SecretsKube, sql_secrets: SqlSecrets, system_under_test: str = "orders") -> KubernetesPlatform:
    made = KubernetesPlatform(OperatorSettings(sql_secrets=sql_secrets), kube,  # type: ignore[arg-type]
                              Owner("shop", "orders-steady", "uid-1"), clock=lambda: 0.0)
    made.system_under_test = system_under_test
    return made


def test_the_url_is_read_from_a_secret_granted_to_the_system_under_test_for_its_purpose():
    kube = SecretsKube({("shop", "orders-ledger-db"): {"url": URL}, ("shop", "orders-reset-db"): {"url": URL}})
    assert platform(kube, grants()).target_secret("orders-ledger-db", "url", COUNT) == URL
    assert platform(kube, grants()).target_secret("orders-reset-db", "url", RESET) == URL
    assert kube.read == [("shop", "orders-ledger-db"), ("shop", "orders-reset-db")]


@pytest.mark.parametrize("name, field, system_under_test, says", [
    ("other", COUNT, "orders", "operator.sqlSecrets.shop.count does not list it (add other: [orders])"),
    # The count's read-only login used for the reset's statements: what ALTER ROLE would take over.
    ("orders-ledger-db", RESET, "orders", "it is listed for the count (operator.sqlSecrets.shop.count), not the reset"),
    ("orders-reset-db", COUNT, "orders", "it is listed for the reset (operator.sqlSecrets.shop.reset), not the count"),
    # Granted, but to another SystemUnderTest of the namespace.
    ("audit-db", COUNT, "orders", "operator.sqlSecrets.shop.count lets only the SystemUnderTests audit use it"),
])
def test_a_secret_not_granted_for_that_purpose_and_system_is_refused_unread(name, field, system_under_test, says):
    kube = SecretsKube({("shop", name): {"url": URL}})
    with pytest.raises(SqlCountError) as error:
        platform(kube, grants(), system_under_test).target_secret(name, "url", field)
    assert str(error.value).startswith(f"{field}.secretRef: SystemUnderTest {system_under_test} may not use Secret"
                                       f" shop/{name}") and says in str(error.value), str(error.value)
    assert kube.read == []  # not even asked for: the operator keeps to what the chart grants


@pytest.mark.parametrize("kube, says", [
    (SecretsKube({}, refuse=403), "the operator may not read Secret shop/orders-ledger-db: grant it"),
    (SecretsKube({}), "there is no Secret shop/orders-ledger-db"),
    (SecretsKube({("shop", "orders-ledger-db"): {"uri": URL}}), "Secret shop/orders-ledger-db has no key 'url'"),
])
def test_a_granted_secret_that_cannot_be_read_is_an_error_naming_the_secret_ref(kube, says):
    with pytest.raises(SqlCountError) as error:
        platform(kube, grants()).target_secret("orders-ledger-db", "url", COUNT)
    assert str(error.value).startswith(f"{COUNT}.secretRef: ") and says in str(error.value)
    assert "Pa55word" not in str(error.value)


def test_a_target_whose_sql_names_a_secret_not_granted_to_it_is_refused_before_it_starts():
    test = spec(target={"systemUnderTest": "orders"}, reset=True)

    def problems(grant: dict) -> list[str]:
        return resolve_target(TargetsKube({("shop", "orders"): copy.deepcopy(RESETTING)}), "shop", test, "elves", (),
                              grants(grant))[1]

    assert problems(GRANTS) == []
    prefix = "spec.target.systemUnderTest: SystemUnderTest shop/orders's "
    # The count's Secret named for the reset too: refused, naming the reset's field.
    as_reset = copy.deepcopy(RESETTING)
    as_reset["spec"]["reset"]["sql"]["secretRef"]["name"] = "orders-ledger-db"
    _, found, _ = resolve_target(TargetsKube({("shop", "orders"): as_reset}), "shop", test, "elves", (), grants())
    assert found == [prefix + "spec.reset.sql.secretRef: SystemUnderTest orders may not use Secret"
                     " shop/orders-ledger-db for its reset: it is listed for the count (operator.sqlSecrets.shop.count),"
                     " not the reset: a Secret serves one purpose"]
    # Granted to another SystemUnderTest, or in another namespace.
    assert problems({"shop": {"count": {"orders-ledger-db": ["audit"]}, "reset": {"orders-reset-db": ["orders"]}}}) == [
        prefix + "spec.ledger.persisted.sql.secretRef: SystemUnderTest orders may not use Secret shop/orders-ledger-db"
                 " for its count: operator.sqlSecrets.shop.count lets only the SystemUnderTests audit use it (add orders"
                 " beside it)"]
    assert [p.split(": ")[1] for p in problems({"team": GRANTS["shop"]})] == [
        "SystemUnderTest shop/orders's spec.ledger.persisted.sql.secretRef", "SystemUnderTest shop/orders's spec.reset.sql.secretRef"]


def test_the_settings_read_the_grants_and_refuse_the_old_list_and_a_secret_for_both_purposes():
    assert OperatorSettings.from_env({}).sql_secrets == SqlSecrets()
    settings = OperatorSettings.from_env({"ELVES_SQL_SECRETS": json.dumps(GRANTS)})
    assert settings.sql_secrets.grants["shop"]["reset"] == {"orders-reset-db": ("orders",)}
    with pytest.raises(ValueError, match=r"^ELVES_LEDGER_SECRETS .* is replaced by ELVES_SQL_SECRETS \(the chart's"
                                         r" operator.sqlSecrets\)"):
        OperatorSettings.from_env({"ELVES_LEDGER_SECRETS": "shop/orders-ledger-db"})
    both = {"shop": {"count": {"db": ["orders"]}, "reset": {"db": ["orders"]}}}
    for value, words in ((both, "shop: db listed for both count and reset"),
                         ({"shop": ["db"]}, "shop: maps count and reset to Secrets"),
                         ({"shop": {"count": {"db": []}}}, "shop.count: maps each Secret to the SystemUnderTests"),
                         ({"shop": {"write": {}}}, "shop: maps count and reset"), ("[", "is not JSON")):
        with pytest.raises(ValueError, match=words) as refused:
            OperatorSettings.from_env({"ELVES_SQL_SECRETS": value if isinstance(value, str) else json.dumps(value)})
        assert str(refused.value).startswith("ELVES_SQL_SECRETS: ")


@pytest.mark.parametrize("name, value, chart_value", [
    ("ELVES_TARGET_NAMESPACES", "shop,elves", "operator.targetNamespaces"),
    ("ELVES_SQL_SECRETS", json.dumps({"elves": {"count": {"elves": ["orders"]}}}), "operator.sqlSecrets"),
    ("ELVES_RUNNER_ENV_SECRETS", json.dumps({"elves": ["elves"]}), "operator.runner.envFromSecrets"),
])
def test_the_operator_refuses_the_release_namespace_where_a_value_grants_power(name, value, chart_value):
    with pytest.raises(ValueError) as refused:
        OperatorSettings.from_env({"ELVES_SYSTEM_NAMESPACE": "elves", name: value})
    assert str(refused.value).startswith(f"{name} (the chart's {chart_value}): elves is the release namespace")


@pytest.mark.parametrize("name, value", [
    ("ELVES_TARGET_NAMESPACES", "kube-system"), ("ELVES_LOADTEST_NAMESPACES", "elves,kube-public"),
    ("ELVES_SQL_SECRETS", json.dumps({"kube-system": {"reset": {"x": ["orders"]}}})),
    ("ELVES_RUNNER_ENV_SECRETS", json.dumps({"kube-node-lease": ["x"]})),
])
def test_the_operator_refuses_kubernetes_own_namespaces_in_every_list(name, value):
    with pytest.raises(ValueError, match="is one of Kubernetes' own namespaces") as refused:
        OperatorSettings.from_env({"ELVES_SYSTEM_NAMESPACE": "elves", name: value})
    assert str(refused.value).startswith(name)
    # Its own namespace is where the built-in system's LoadTests run: allowed there.
    assert OperatorSettings.from_env({"ELVES_SYSTEM_NAMESPACE": "elves",
                                      "ELVES_LOADTEST_NAMESPACES": "elves,shop"}).loadtest_namespaces == ("elves", "shop")
