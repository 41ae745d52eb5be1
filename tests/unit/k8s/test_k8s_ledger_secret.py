"""A SystemUnderTest's SQL persisted count on a cluster (issue 25.1): the operator reads the
database URL only from a Secret the chart's operator.ledgerSecrets lists, in the LoadTest's
namespace; a test naming another is refused before it starts, naming the field and the value;
a Secret that is missing, unreadable or without the key is an error naming secretRef, and its
value shows in no message."""

from __future__ import annotations

import base64
import copy

import pytest
from kubernetes.client.exceptions import ApiException
from test_k8s_target import TargetsKube, spec

from elves.engine.sql_count import SqlCountError
from elves.k8s.names import Owner
from elves.k8s.platform import KubernetesPlatform
from elves.k8s.settings import OperatorSettings
from elves.k8s.target import resolve_target

URL = "postgresql://reader:Pa55word@orders-db.shop.svc:5432/orders?sslmode=require"
ORDERS = {"apiVersion": "elves.dev/v1alpha1", "kind": "SystemUnderTest", "metadata": {"name": "orders"},
          "spec": {"workloads": [{"name": "orders-api"}], "queues": {"rabbitmq": ["orders.in"]},
                   "ledger": {"accepted": {"endpoint": "placeOrder"},
                              "persisted": {"sql": {"secretRef": {"name": "orders-ledger-db", "key": "url"},
                                                    "query": "SELECT count(*) FROM orders WHERE test_id = $TEST_ID"}}}}}


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


def platform(kube: SecretsKube, *allowed: str) -> KubernetesPlatform:
    return KubernetesPlatform(OperatorSettings(ledger_secrets=allowed), kube, Owner("shop", "orders-steady", "uid-1"),  # type: ignore[arg-type]
                              clock=lambda: 0.0)


def test_the_url_is_read_from_a_listed_secret_in_the_loadtests_namespace():
    kube = SecretsKube({("shop", "orders-ledger-db"): {"url": URL}})
    assert platform(kube, "shop/orders-ledger-db").target_secret("orders-ledger-db", "url") == URL
    assert kube.read == [("shop", "orders-ledger-db")]


@pytest.mark.parametrize("kube, allowed, says", [
    (SecretsKube({("shop", "other"): {"url": URL}}), ("shop/orders-ledger-db",),
     "the operator may not read Secret shop/other: the chart's operator.ledgerSecrets lists the Secrets it may"),
    (SecretsKube({("team", "other"): {"url": URL}}), ("team/other",),
     "the operator may not read Secret shop/other"),  # listed, but in another namespace than the test's
    (SecretsKube({}, refuse=403), ("shop/other",), "the operator may not read Secret shop/other: grant it"),
    (SecretsKube({}), ("shop/other",), "there is no Secret shop/other"),
    (SecretsKube({("shop", "other"): {"uri": URL}}), ("shop/other",), "Secret shop/other has no key 'url'"),
])
def test_a_secret_that_may_not_or_cannot_be_read_is_an_error_naming_the_secret_ref(kube, allowed, says):
    with pytest.raises(SqlCountError) as error:
        platform(kube, *allowed).target_secret("other", "url")
    assert str(error.value).startswith("spec.ledger.persisted.sql.secretRef: ") and says in str(error.value)
    assert "Pa55word" not in str(error.value)
    if "may not read Secret shop/other: the chart" in says:
        assert kube.read == []  # not even asked for: the operator keeps to what the chart lists


def test_a_target_whose_sql_count_names_an_unlisted_secret_is_refused_before_it_starts():
    kube = TargetsKube({("shop", "orders"): copy.deepcopy(ORDERS)})
    test = spec(target={"systemUnderTest": "orders"})
    target, problems, _ = resolve_target(kube, "shop", test, "elves", (), ("shop/orders-ledger-db",))
    assert problems == [] and target.ledger.persisted.sql.secret_ref.name == "orders-ledger-db"
    _, problems, _ = resolve_target(kube, "shop", test, "elves", (), ("team/orders-ledger-db",))
    assert problems == ["spec.target.systemUnderTest: SystemUnderTest shop/orders's"
                        " spec.ledger.persisted.sql.secretRef: the operator may not read Secret shop/orders-ledger-db:"
                        " the chart's operator.ledgerSecrets lists the Secrets it may (add orders-ledger-db under shop)"]


def test_the_settings_read_the_listed_secrets():
    assert OperatorSettings.from_env({}).ledger_secrets == ()
    settings = OperatorSettings.from_env({"ELVES_LEDGER_SECRETS": "shop/orders-ledger-db, team/db"})
    assert settings.ledger_secrets == ("shop/orders-ledger-db", "team/db")
    with pytest.raises(ValueError, match="ELVES_LEDGER_SECRETS"):
        OperatorSettings.from_env({"ELVES_LEDGER_SECRETS": "orders-ledger-db"})


def test_reset_steps_make_spec_reset_the_targets_own_through_a_listed_secret():
    """spec.reset in a test of another system runs its SystemUnderTest's reset steps, refused only
    when it has none; their Secret must be listed like the ledger's."""
    resetting = copy.deepcopy(ORDERS)
    resetting["spec"]["reset"] = {"sql": {"secretRef": {"name": "orders-reset-db", "key": "url"},
                                          "statements": ["TRUNCATE orders"]}}
    test = spec(target={"systemUnderTest": "orders"}, reset=True)
    listed = ("shop/orders-ledger-db", "shop/orders-reset-db")
    target, problems, _ = resolve_target(TargetsKube({("shop", "orders"): resetting}), "shop", test, "elves", (), listed)
    assert problems == [] and target.reset.sql.statements == ["TRUNCATE orders"]
    _, problems, _ = resolve_target(TargetsKube({("shop", "orders"): resetting}), "shop", test, "elves", (), listed[:1])
    assert problems == ["spec.target.systemUnderTest: SystemUnderTest shop/orders's spec.reset.sql.secretRef: the"
                        " operator may not read Secret shop/orders-reset-db: the chart's operator.ledgerSecrets lists"
                        " the Secrets it may (add orders-reset-db under shop)"]
    _, problems, _ = resolve_target(TargetsKube({("shop", "orders"): copy.deepcopy(ORDERS)}), "shop", test, "elves",
                                    (), listed)
    assert problems == ["spec.reset: acts on Elves' own deployments: SystemUnderTest shop/orders states no reset steps"
                        " of its own (its spec.reset.sql)"]
