"""Tier 1: no chart value hands the operator power in Kubernetes' own namespaces or, where a
value grants power over what lives there, in the release namespace: the schema
refuses `kube-*` in every namespace list, the chart refuses the release namespace when it renders,
naming the value; the replaced forms of the Secret allowlists are refused naming the new ones. The
operator checks the same again at start (tests/unit/k8s/test_k8s_sql_secrets.py, and on a real
API server tests/apiserver/test_operator_reach.py).

What a user would notice if these broke: a SystemUnderTest's author in kube-system or in the
release namespace able to have any pod deleted, any workload scaled, or a chart Secret read.
"""

from __future__ import annotations

import pytest

from chart_testkit import NAMESPACE, template_error


@pytest.mark.parametrize("setting, path", [
    ("operator.targetNamespaces={shop,kube-system}", "/operator/targetNamespaces/1"),
    ("operator.loadTestNamespaces={kube-public}", "/operator/loadTestNamespaces/0"),
    ("operator.watchNamespaces={elves,kube-node-lease}", "/operator/watchNamespaces/1"),
    ("operator.sqlSecrets.kube-system.count.db={orders}", "/operator/sqlSecrets"),
    ("operator.runner.envFromSecrets.kube-system={k6-hosts}", "/operator/runner/envFromSecrets"),
])
def test_the_schema_refuses_kubernetes_own_namespaces_in_every_list(helm, setting, path):
    error = template_error(helm, setting)
    assert f"at '{path}'" in error and "'kube-" in error, error
    assert "does not match pattern" in error or "additional properties 'kube-system' not allowed" in error, error


@pytest.mark.parametrize("setting, says", [
    ("operator.targetNamespaces={shop,elves}", f"operator.targetNamespaces: {NAMESPACE} is the release namespace"),
    ("operator.sqlSecrets.elves.count.elves={orders}", f"operator.sqlSecrets: {NAMESPACE} is the release namespace"),
    ("operator.runner.envFromSecrets.elves={elves}",
     f"operator.runner.envFromSecrets: {NAMESPACE} is the release namespace"),
    ("operator.loadTestNamespaces={shop,elves}",
     f"operator.loadTestNamespaces: {NAMESPACE} is the release namespace, always included"),
])
def test_the_chart_refuses_the_release_namespace_where_a_value_would_grant_power_there(helm, setting, says):
    assert says in template_error(helm, setting)


@pytest.mark.parametrize("settings, says", [
    (("operator.ledgerSecrets.shop={orders-ledger-db}",), "operator.ledgerSecrets is replaced by operator.sqlSecrets"),
    (("operator.runner.envFromSecrets={k6-hosts}",), "operator.runner.envFromSecrets is now a map from the LoadTests'"
                                                     " namespace"),
    (("operator.sqlSecrets.shop.count.db={orders}", "operator.sqlSecrets.shop.reset.db={orders}"),
     "operator.sqlSecrets.shop: db is listed for both count and reset"),
])
def test_the_replaced_forms_and_a_secret_for_both_purposes_are_refused_naming_what_to_write(helm, settings, says):
    assert says in template_error(helm, *settings)


def test_all_mistakes_come_in_one_message(helm):
    error = template_error(helm, "operator.targetNamespaces={elves}", "operator.ledgerSecrets.shop={x}")
    assert "operator.targetNamespaces: elves" in error and "operator.ledgerSecrets is replaced" in error
