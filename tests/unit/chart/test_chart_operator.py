"""Tier 1: the operator's Deployment and RBAC: kopf on the handlers module, the caps from
values, the Grafana credentials from a Secret, and rights that cover what it does and no more.

What a user would notice if these broke: an operator the API server forbids a step of a
LoadTest, or one with more rights than it needs (the system's Secret or workloads reachable
cluster-wide).
"""

from __future__ import annotations

import json

from chart_testkit import (NAMESPACE, SCOPED_OPERATOR, SERVICES, ci_values, env_of, installs_the_system, named, of_kind,
                           render, rules_of)

from elves.k8s import autoscalers


def test_operator_caps_follow_values(helm):
    objects = render(helm, None, "operator.limits.maxReplicas=5", "operator.limits.maxMemory=2Gi",
                     "operator.limits.runCredentialMax=90m")
    env = env_of(named(objects, "Deployment", "elves-operator")["spec"]["template"]["spec"]["containers"][0])
    assert (env["ELVES_MAX_REPLICAS"]["value"], env["ELVES_MAX_MEMORY"]["value"]) == ("5", "2Gi")
    assert env["ELVES_RUN_CREDENTIAL_MAX"]["value"] == "90m"
    default = env_of(named(render(helm), "Deployment", "elves-operator")["spec"]["template"]["spec"]["containers"][0])
    assert default["ELVES_RUN_CREDENTIAL_MAX"]["value"] == "2h"


def test_operator_runs_loadtests_only_where_it_may_write_and_runners_only_as_values_allow(helm):
    def env(*values):
        return {k: v["value"] for k, v in env_of(named(render(helm, None, *values), "Deployment", "elves-operator")[
            "spec"]["template"]["spec"]["containers"][0]).items() if "value" in v}
    default = env()
    assert default["ELVES_LOADTEST_NAMESPACES"] == NAMESPACE
    assert (default["ELVES_RUNNER_ENV_SECRETS"], default["ELVES_RUNNER_NODE_SELECTOR"],
            default["ELVES_RUNNER_TOLERATIONS"], default["ELVES_RUNNER_AFFINITY"]) == ("{}", "{}", "[]", "false")
    assert env("operator.loadTestNamespaces={default,team-a}")["ELVES_LOADTEST_NAMESPACES"] == \
        f"default,team-a,{NAMESPACE}"
    assert env(*SCOPED_OPERATOR)["ELVES_LOADTEST_NAMESPACES"] == "elves,load-tests"
    runner = env("operator.runner.envFromSecrets.team-a={k6-hosts,k6-tokens}", "operator.runner.nodeSelector.pool={load}",
                 "operator.runner.tolerations[0].key=load", "operator.runner.tolerations[0].operator=Exists",
                 "operator.runner.affinity=true")
    assert json.loads(runner["ELVES_RUNNER_ENV_SECRETS"]) == {"team-a": ["k6-hosts", "k6-tokens"]}
    assert json.loads(runner["ELVES_RUNNER_NODE_SELECTOR"]) == {"pool": ["load"]}
    assert json.loads(runner["ELVES_RUNNER_TOLERATIONS"]) == [{"key": "load", "operator": "Exists"}]
    assert runner["ELVES_RUNNER_AFFINITY"] == "true"


def test_operator_runs_kopf_on_the_handlers_module(helm):
    command = named(render(helm), "Deployment", "elves-operator")["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[:3] == ["kopf", "run", "--module=elves.k8s.handlers"]
    assert "--all-namespaces" in command and "--standalone" in command
    scoped = named(render(helm, None, *SCOPED_OPERATOR), "Deployment", "elves-operator")
    scoped_command = scoped["spec"]["template"]["spec"]["containers"][0]["command"]
    assert {"--namespace=elves", "--namespace=load-tests", "--peering=elves"} <= set(scoped_command)
    assert "--all-namespaces" not in scoped_command


def test_grafana_credentials_come_from_a_secret(helm):
    operator = named(render(helm, None, "operator.grafanaSecret=grafana-credentials"), "Deployment", "elves-operator")
    env = env_of(operator["spec"]["template"]["spec"]["containers"][0])
    for variable, key in (("ELVES_GRAFANA_TOKEN", "token"), ("ELVES_GRAFANA_USER", "user"),
                          ("ELVES_GRAFANA_PASSWORD", "password")):
        assert env[variable]["valueFrom"]["secretKeyRef"] == {"name": "grafana-credentials", "key": key, "optional": True}
    plain = env_of(named(render(helm), "Deployment", "elves-operator")["spec"]["template"]["spec"]["containers"][0])
    assert not {"ELVES_GRAFANA_TOKEN", "ELVES_GRAFANA_USER", "ELVES_GRAFANA_PASSWORD"} & set(plain)


@ci_values
def test_operator_rbac_is_least_privilege(helm, values_file):
    objects = render(helm, values_file)
    rules = rules_of(objects, "ClusterRole") + rules_of(objects, "Role")
    for name, rule in rules:
        assert "*" not in rule["verbs"] and "*" not in rule["resources"] and "*" not in rule["apiGroups"], name
        assert not {"escalate", "bind", "impersonate"} & set(rule["verbs"]), name
        if "secrets" in rule["resources"] and "get" in rule["verbs"]:
            assert rule.get("resourceNames") == ["elves"] and rule["verbs"] == ["get"], name
    bound_cluster_wide = {o["roleRef"]["name"] for o in of_kind(objects, "ClusterRoleBinding")}
    cluster_resources = {r for name, rule in rules_of(objects, "ClusterRole") if name in bound_cluster_wide
                         for r in rule["resources"]}
    assert not cluster_resources & {"secrets", "deployments", "deployments/scale", "statefulsets"}, \
        "the system's workloads and Secret are reachable only in its namespace"
    cluster_pod_verbs = {v for _, rule in rules_of(objects, "ClusterRole") if "pods" in rule["resources"]
                         for v in rule["verbs"]}
    assert "delete" not in cluster_pod_verbs


def _allowed(objects, kind, group, resource, verb, namespace=None, name=None):
    for obj in of_kind(objects, kind):
        if namespace and obj["metadata"].get("namespace") != namespace:
            continue
        for rule in obj["rules"]:
            if group in rule["apiGroups"] and resource in rule["resources"] and verb in rule["verbs"] \
                    and (name is None or "resourceNames" not in rule or name in rule["resourceNames"]):
                return True
    return False


def test_operator_rbac_covers_what_the_operator_does(helm):
    objects = render(helm)

    def allowed(kind, group, resource, verb, namespace=None, name=None):
        return _allowed(objects, kind, group, resource, verb, namespace, name)

    for resource, verb in [("loadtests", "watch"), ("loadtests", "patch"), ("loadtests", "delete"),
                           ("loadtests/status", "patch"),
                           ("loadtests/finalizers", "update")]:
        assert allowed("ClusterRole", "elves.dev", resource, verb), (resource, verb)
    assert allowed("ClusterRole", "", "events", "create")
    writes = named(objects, "ClusterRole", "elves-elves-operator-run-objects")
    # What running a test takes, bound only where tests run (below), never cluster-wide.
    work = [writes]
    for verb in ("create", "get", "list", "watch", "delete"):
        assert _allowed(work, "ClusterRole", "k6.io", "testruns", verb), verb
    assert _allowed(work, "ClusterRole", "k6.io", "testruns/status", "get")
    assert _allowed(work, "ClusterRole", "", "configmaps", "get") and _allowed(work, "ClusterRole", "", "pods", "watch")
    assert _allowed(work, "ClusterRole", "elves.dev", "systemundertests", "get")
    # Another system's one-test lock, beside its SystemUnderTest (elves.k8s.lock): by name only.
    assert _allowed(work, "ClusterRole", "coordination.k8s.io", "leases", "update", name="elves-loadtest-lock")
    assert not _allowed(work, "ClusterRole", "coordination.k8s.io", "leases", "update", name="another-lease")
    assert allowed("ClusterRole", "apiextensions.k8s.io", "customresourcedefinitions", "watch")
    for deployment in SERVICES:
        assert allowed("Role", "apps", "deployments/scale", "patch", NAMESPACE, deployment)
        assert allowed("Role", "apps", "deployments", "patch", NAMESPACE, deployment)
    assert allowed("Role", "apps", "statefulsets", "get", NAMESPACE, "rabbitmq")
    assert allowed("Role", "", "pods", "delete", NAMESPACE)
    # killPod, restartInfra and reset run their commands in the system's pods through exec
    # (a websocket exec is authorized as create since Kubernetes 1.30, as get before it).
    assert allowed("Role", "", "pods/exec", "create", NAMESPACE) and allowed("Role", "", "pods/exec", "get", NAMESPACE)
    assert allowed("Role", "", "secrets", "get", NAMESPACE, "elves")
    assert allowed("Role", "coordination.k8s.io", "leases", "update", NAMESPACE, "elves-loadtest-lock")
    # A retry replaces a run's object by a JSON patch that checks its owner first (patch, never
    # update); pruning old reports: list and delete ConfigMaps, bound only where the writes are.
    assert [(rule["resources"], rule["verbs"]) for rule in writes["rules"]][-2:] == \
        [(["configmaps", "secrets"], ["create", "patch"]), (["configmaps"], ["list", "delete"])]
    bindings = [o for o in of_kind(objects, "RoleBinding") if o["roleRef"]["name"] == writes["metadata"]["name"]]
    assert [b["metadata"]["namespace"] for b in bindings] == [NAMESPACE]


@ci_values
def test_operator_patches_deletes_and_writes_only_what_it_must(helm, values_file):
    """The services' Deployments by name; ConfigMap and Secret writes never through a cluster-wide
    binding, and the one Secret it reads by name."""
    objects = render(helm, values_file)
    for name, rule in rules_of(objects, "Role"):
        if name.endswith("-target-workloads"):  # another system's, only where values list (below)
            continue
        if {"deployments", "deployments/scale"} & set(rule["resources"]):
            assert rule["resourceNames"] == sorted(SERVICES), rule
        if "statefulsets" in rule["resources"] or ("leases" in rule["resources"] and "update" in rule["verbs"]):
            assert rule.get("resourceNames"), rule
    bound_cluster_wide = {o["roleRef"]["name"] for o in of_kind(objects, "ClusterRoleBinding")}
    for name, rule in rules_of(objects, "ClusterRole"):
        if name in bound_cluster_wide and {"configmaps", "secrets"} & set(rule["resources"]):
            assert set(rule["verbs"]) <= {"get", "list", "watch"}, (name, rule)
            assert "secrets" not in rule["resources"], (name, rule)


@ci_values
def test_operator_may_do_to_autoscalers_exactly_what_spec_system_autoscaling_does(helm, values_file):
    """The verbs elves.k8s.autoscalers.VERBS names (what the platform calls: its tier-1 test holds
    them to the calls), on each service's own kind and name, in the system's namespace only;
    create cannot be narrowed by name."""
    objects = render(helm, values_file)
    kinds = (autoscalers.SCALED_OBJECT, autoscalers.HPA)
    granted: dict[tuple, list] = {}
    for obj in of_kind(objects, "Role") + of_kind(objects, "ClusterRole"):
        for rule in obj["rules"]:
            for kind in kinds:
                if kind.plural in rule["resources"]:
                    for verb in rule["verbs"]:
                        granted.setdefault((tuple(rule["apiGroups"]), kind.plural, verb), []).append(
                            (obj["kind"], obj["metadata"].get("namespace"), tuple(rule.get("resourceNames", ()))))
    expected = {}
    for kind in kinds if installs_the_system(values_file) else ():  # the harness alone: no services to scale
        names = tuple(sorted(s for s in SERVICES if autoscalers.kind_of(s) == kind))
        for verb in autoscalers.VERBS:
            expected[((kind.group,), kind.plural, verb)] = [("Role", NAMESPACE, () if verb == "create" else names)]
    assert granted == expected


def test_load_test_namespaces_get_run_object_writes_there_only(helm):
    objects = render(helm, None, "operator.loadTestNamespaces={default,team-a}")
    bindings = [o for o in of_kind(objects, "RoleBinding") if o["metadata"]["name"] == "elves-operator-run-objects"]
    assert sorted(b["metadata"]["namespace"] for b in bindings) == ["default", NAMESPACE, "team-a"]


def test_namespace_list_gets_roles_not_cluster_roles(helm):
    objects = render(helm, None, *SCOPED_OPERATOR)
    cluster_resources = {r for _, rule in rules_of(objects, "ClusterRole") for r in rule["resources"]}
    assert "loadtests" not in cluster_resources and "testruns" not in cluster_resources
    namespaces = {o["metadata"]["namespace"] for o in of_kind(objects, "Role")
                  if any("loadtests" in r["resources"] for r in o["rules"])}
    assert namespaces == {"elves", "load-tests"}
    assert any("kopfpeerings" in r["resources"] for _, r in rules_of(objects, "Role"))


def test_another_systems_workloads_are_reachable_only_in_the_target_namespaces_values_list(helm):
    """Faults on a SystemUnderTest's workloads (elves.k8s.target_workloads): nothing by default;
    with operator.targetNamespaces, a Role in each of them and nowhere else, with what the faults
    do (read, patch and scale Deployments and StatefulSets, delete pods), the listing a selector's
    readiness needs, the verbs spec.system.autoscaling of its workloads needs, and the operator told."""
    def target_roles(objects):
        return {o["metadata"]["namespace"]: o["rules"] for o in of_kind(objects, "Role")
                if o["metadata"]["name"].endswith("-target-workloads")}

    plain = render(helm)
    assert target_roles(plain) == {}
    operator = named(plain, "Deployment", "elves-operator")["spec"]["template"]["spec"]["containers"][0]
    assert env_of(operator)["ELVES_TARGET_NAMESPACES"]["value"] == ""
    objects = render(helm, None, "operator.loadTestNamespaces={shop,team-a}", "operator.targetNamespaces={shop}")
    roles = target_roles(objects)
    assert list(roles) == ["shop"]
    assert [(r["apiGroups"], r["resources"], r["verbs"]) for r in roles["shop"]] == [
        (["apps"], ["deployments", "statefulsets", "deployments/scale", "statefulsets/scale"], ["get", "patch"]),
        (["apps"], ["deployments", "statefulsets"], ["list"]),
        ([""], ["pods"], ["get", "list", "delete"]),
        # spec.system.autoscaling of its workloads: what elves.k8s.autoscalers.VERBS names, and no
        # TriggerAuthentication (KEDA reads the team's; the operator never does).
        (["keda.sh"], ["scaledobjects"], list(autoscalers.VERBS)),
        (["autoscaling"], ["horizontalpodautoscalers"], list(autoscalers.VERBS))]
    bindings = [o for o in of_kind(objects, "RoleBinding") if o["metadata"]["name"].endswith("-target-workloads")]
    assert [(b["metadata"]["namespace"], b["subjects"][0]["name"]) for b in bindings] == [("shop", "elves-operator")]
    operator = named(objects, "Deployment", "elves-operator")["spec"]["template"]["spec"]["containers"][0]
    assert env_of(operator)["ELVES_TARGET_NAMESPACES"]["value"] == "shop"


def test_a_targets_sql_secrets_are_readable_by_name_only_where_values_list_them(helm):
    """A SystemUnderTest's SQL database URLs (spec.ledger.persisted.sql.secretRef,
    spec.reset.sql.secretRef): no Secret of another namespace by default; with operator.sqlSecrets,
    a Role per namespace with get on exactly the Secrets listed there for either purpose (no list,
    no watch, no other Secret), and the operator told which SystemUnderTest may use which for what."""
    def sql_roles(objects):
        return {o["metadata"]["namespace"]: o["rules"] for o in of_kind(objects, "Role")
                if o["metadata"]["name"].endswith("-sql-secrets")}

    def operator_env(objects):
        container = named(objects, "Deployment", "elves-operator")["spec"]["template"]["spec"]["containers"][0]
        return json.loads(env_of(container)["ELVES_SQL_SECRETS"]["value"])

    plain = render(helm)
    assert sql_roles(plain) == {} and operator_env(plain) == {}
    objects = render(helm, None, "operator.sqlSecrets.shop.count.orders-ledger-db={orders}",
                     "operator.sqlSecrets.shop.count.audit-db={audit,orders}",
                     "operator.sqlSecrets.shop.reset.orders-reset-db={orders}",
                     "operator.sqlSecrets.team-a.count.reports-db={reports}")
    assert sql_roles(objects) == {
        "shop": [{"apiGroups": [""], "resources": ["secrets"],
                  "resourceNames": ["audit-db", "orders-ledger-db", "orders-reset-db"], "verbs": ["get"]}],
        "team-a": [{"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["reports-db"], "verbs": ["get"]}]}
    bindings = [o for o in of_kind(objects, "RoleBinding") if o["metadata"]["name"].endswith("-sql-secrets")]
    assert sorted((b["metadata"]["namespace"], b["roleRef"]["name"], b["subjects"][0]["name"]) for b in bindings) == [
        ("shop", "elves-operator-sql-secrets", "elves-operator"),
        ("team-a", "elves-operator-sql-secrets", "elves-operator")]
    assert operator_env(objects) == {
        "shop": {"count": {"audit-db": ["audit", "orders"], "orders-ledger-db": ["orders"]},
                 "reset": {"orders-reset-db": ["orders"]}},
        "team-a": {"count": {"reports-db": ["reports"]}}}
    # Nowhere else does the operator get a Secret it did not write: the release's own, by name.
    readable = [(o["metadata"]["namespace"], r.get("resourceNames")) for o in of_kind(objects, "Role")
                for r in o["rules"] if "secrets" in r["resources"] and "get" in r["verbs"]]
    assert sorted(readable) == [("elves", ["elves"]), ("shop", ["audit-db", "orders-ledger-db", "orders-reset-db"]),
                                ("team-a", ["reports-db"])]


def test_the_secret_the_operator_reads_holds_no_password(helm):
    """The release Secret the operator may get (it signs k6's tokens with jwt-secret and calls the
    registry with service-key) holds nothing else: PostgreSQL's superuser's password is in a Secret
    only PostgreSQL's pod reads."""
    for sets in ((), ("rabbitmq.enabled=false", "externalRabbitmq.host=mq", "externalRabbitmq.password=x",
                      "postgresql.enabled=false", "externalPostgresql.host=db", "externalPostgresql.password=y")):
        objects = render(helm, None, *sets)
        assert set(named(objects, "Secret", "elves")["data"]) == {"jwt-secret", "service-key"}, sets
    objects = render(helm)
    superuser = named(objects, "Secret", "elves-postgres")
    assert set(superuser["data"]) == {"postgres-password"}
    env = env_of(named(objects, "StatefulSet", "postgres")["spec"]["template"]["spec"]["containers"][0])
    assert env["POSTGRES_PASSWORD"]["valueFrom"]["secretKeyRef"] == {"name": "elves-postgres", "key": "postgres-password"}
    readers = [o["metadata"]["name"] for kind in ("Deployment", "StatefulSet") for o in of_kind(objects, kind)
               if "elves-postgres" in json.dumps(o["spec"])]
    assert readers == ["postgres"]
