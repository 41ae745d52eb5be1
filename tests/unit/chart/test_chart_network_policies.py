"""Tier 1: the chart's NetworkPolicies: deny by default both ways, then only the paths the
architecture needs, in and out. (Tier 4 shows a cluster enforcing them: tests/e2e.)

What a user would notice if these broke: a pod outside the system reaching the registry,
RabbitMQ or PostgreSQL, or a service cut off from its broker or from DNS.
"""

from __future__ import annotations

from chart_testkit import CHART, POD_KINDS, SERVICES, ci_values, named, of_kind, pod_specs, render, run_helm


def _ingress(objects, name):
    return named(objects, "NetworkPolicy", name)["spec"]["ingress"]


def _ports(rule):
    return {p["port"] for p in rule.get("ports", [])}


def test_network_policies_let_only_the_expected_paths_through(helm):
    objects = render(helm)
    monitoring = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
    gateway = _ingress(objects, "gateway")
    assert {"from": [{"namespaceSelector": {}}], "ports": [{"port": "http", "protocol": "TCP"}]} in gateway
    for name in SERVICES:
        rules = _ingress(objects, name)
        management = [r for r in rules if "management" in _ports(r)]
        assert management and all(r["from"] == [monitoring] for r in management), name
    registry_sources = [peer for r in _ingress(objects, "registry") if "http" in _ports(r) for peer in r["from"]]
    components = {p["podSelector"]["matchLabels"].get("app.kubernetes.io/component") for p in registry_sources
                  if "namespaceSelector" not in p}
    assert components == {"gateway", "operator"}
    assert {"namespaceSelector": {}, "podSelector": {"matchLabels": {"app": "k6", "runner": "true"}}} in registry_sources
    assert all("http" not in _ports(r) for r in _ingress(objects, "ingestor"))
    postgres = _ingress(objects, "postgres")
    assert [p["podSelector"]["matchLabels"]["app.kubernetes.io/component"] for r in postgres for p in r["from"]] \
        == ["registry"]
    amqp = [r for r in _ingress(objects, "rabbitmq") if "amqp" in _ports(r)]
    assert amqp[0]["from"][0]["podSelector"]["matchExpressions"][0]["values"] == sorted(SERVICES)
    assert _ingress(objects, "elves-operator") == []


def _egress_ports(objects, name):
    return {(port["port"], port["protocol"]) for rule in named(objects, "NetworkPolicy", name)["spec"]["egress"]
            for port in rule.get("ports", [])}


@ci_values
def test_network_policies_deny_by_default_both_ways(helm, values_file):
    objects = render(helm, values_file)
    policies = of_kind(objects, "NetworkPolicy")
    if not policies:
        return  # switched off in this set
    deny = named(objects, "NetworkPolicy", "elves-default-deny")["spec"]
    assert deny["policyTypes"] == ["Ingress", "Egress"] and "ingress" not in deny and "egress" not in deny
    assert deny["podSelector"]["matchLabels"] == {"app.kubernetes.io/name": "elves",
                                                  "app.kubernetes.io/instance": "elves"}
    components = {labels["app.kubernetes.io/component"] for _, spec in pod_specs(objects)
                  for labels in [_pod_labels(objects, spec)] if labels}
    covered = {p["spec"]["podSelector"]["matchLabels"].get("app.kubernetes.io/component") for p in policies}
    assert components <= covered, "every pod has a policy that opens its paths"
    for policy in policies:
        assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"], policy["metadata"]["name"]


def _pod_labels(objects, spec):
    for obj in objects:
        if obj["kind"] == "Pod" and obj["spec"] is spec:
            return obj["metadata"]["labels"]
        if obj["kind"] in POD_KINDS and obj["kind"] != "Pod" and obj["spec"]["template"]["spec"] is spec:
            return obj["spec"]["template"]["metadata"]["labels"]
    return None


def test_network_policies_let_each_pod_out_only_where_it_must(helm):
    objects = render(helm)
    dns = {(53, "UDP"), (53, "TCP")}
    assert _egress_ports(objects, "gateway") == dns | {(5672, "TCP"), (8081, "TCP")}
    assert _egress_ports(objects, "registry") == dns | {(5672, "TCP"), (5432, "TCP")}
    assert _egress_ports(objects, "ingestor") == dns | {(5672, "TCP")}
    assert _egress_ports(objects, "rabbitmq") == dns and _egress_ports(objects, "postgres") == dns
    assert {(443, "TCP"), (6443, "TCP"), (8080, "TCP"), (8081, "TCP")} <= _egress_ports(objects, "elves-operator")
    assert _egress_ports(objects, "elves-test") == dns | {(8080, "TCP")}
    # An enforcing cluster sees the DNS pods' own port (after the Service's translation).
    unprivileged_dns = render(helm, None, "networkPolicy.dns.ports={1053}")
    assert _egress_ports(unprivileged_dns, "ingestor") == {(1053, "UDP"), (1053, "TCP"), (5672, "TCP")}
    scoped = render(helm, None, "networkPolicy.loadGeneratorNamespaces={load}")
    peers = [p for r in _ingress(scoped, "registry") for p in r["from"] if "namespaceSelector" in p]
    assert peers[0]["namespaceSelector"]["matchExpressions"][0]["values"] == ["load"]


def test_the_operator_reaches_a_targets_database_only_where_values_say(helm, tmp_path):
    """An SQL persisted count or reset (operator.sqlSecrets): no way out to any database by default; each
    of networkPolicy.ledgerDatabases opens its namespace (and pods) or CIDR, on its port only."""
    def database_rules(objects):
        return [r for r in named(objects, "NetworkPolicy", "elves-operator")["spec"]["egress"]
                if any(p["port"] in (5432, 6432) for p in r.get("ports", []))]

    assert database_rules(render(helm)) == []
    values = tmp_path / "ledger-databases.yaml"
    values.write_text("networkPolicy:\n  ledgerDatabases:\n"
                      "    - {namespace: shop, podLabels: {app: orders-db}, port: 5432}\n"
                      "    - {cidr: 10.20.0.0/16, port: 6432}\n")
    rules = database_rules(render(helm, values))
    assert rules == [
        {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "shop"}},
                 "podSelector": {"matchLabels": {"app": "orders-db"}}}],
         "ports": [{"port": 5432, "protocol": "TCP"}]},
        {"to": [{"ipBlock": {"cidr": "10.20.0.0/16"}}], "ports": [{"port": 6432, "protocol": "TCP"}]}]
    # A database named neither by namespace nor by CIDR, or by both, is refused by the schema.
    for bad in ("{port: 5432}", "{namespace: shop, cidr: 10.0.0.0/8, port: 5432}", "{cidr: 10.0.0.0/8, podLabels: {a: b}, port: 1}"):
        values.write_text(f"networkPolicy:\n  ledgerDatabases:\n    - {bad}\n")
        result = run_helm(helm, "template", "elves", str(CHART), "--values", str(values))
        assert result.returncode != 0 and "ledgerDatabases" in result.stderr, bad
