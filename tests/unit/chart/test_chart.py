"""Tier 1: the elves Helm chart (charts/elves) renders, rejects bad values and keeps the house rules.

What a user would notice if these broke: `helm install` failing on a ci value set, a typo in
values silently ignored, a pod refused by a `restricted` namespace, a pod without limits or
probes, a Deployment that drops requests on shutdown, a dashboard or alert asking for a
metric the engine does not use, an operator with more rights than it needs.

Needs helm, built by tools/install-helm.sh into $ELVES_CACHE/bin (or on PATH). Without it the
helm tests skip, except under CI=true where they fail. Server-side dry-run against a real
kube-apiserver is tier 3 (tests/apiserver).
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "charts" / "elves"
CI_VALUES = sorted((CHART / "ci").glob("*.yaml"))
DASHBOARDS = sorted((CHART / "dashboards").glob("*.json"))
NAMESPACE = "elves"
SERVICES = ("gateway", "registry", "ingestor")
# The APIs of kube-prometheus-stack (ServiceMonitor, PrometheusRule) and k6-operator (TestRun):
# the chart renders their objects, and NOTES.txt stays quiet about them, only where they exist.
MONITORING_API = "monitoring.coreos.com/v1"
K6_API = "k6.io/v1alpha1"
CLUSTER_API_VERSIONS = (MONITORING_API, K6_API)
POD_KINDS = {"Deployment", "StatefulSet", "DaemonSet", "Job", "Pod"}
# Volume types the restricted Pod Security Standard allows.
RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                      "projected", "secret"}


def _missing(reason: str):
    """Skip for a missing prerequisite, or fail under CI=true (the tier rule)."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: prerequisites must be present)")
    pytest.skip(reason)


@functools.cache
def _helm_path() -> str | None:
    """The helm tools/which-helm.sh names: the one lookup the scripts and every tier share."""
    result = subprocess.run([str(REPO / "tools" / "which-helm.sh")], capture_output=True, text=True, timeout=30)
    return result.stdout.strip() if result.returncode == 0 else None


@pytest.fixture(scope="session")
def helm() -> str:
    path = _helm_path()
    if path is None:
        _missing("helm not found (tools/which-helm.sh): run tools/install-helm.sh")
    return path


def run_helm(helm: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([helm, *args], capture_output=True, text=True, timeout=120)


def _api_version_args(api_versions: tuple[str, ...]) -> list[str]:
    return [arg for version in api_versions for arg in ("--api-versions", version)]


@functools.cache
def render(helm: str, values_file: Path | None = None, *sets: str,
           api_versions: tuple[str, ...] = CLUSTER_API_VERSIONS) -> tuple[dict, ...]:
    """`helm template` of the chart (hooks included) as a tuple of objects, on a cluster that
    serves `api_versions` besides the built-in ones (() = a bare cluster)."""
    args = ["template", "elves", str(CHART), "--namespace", NAMESPACE, *_api_version_args(api_versions)]
    if values_file is not None:
        args += ["--values", str(values_file)]
    for item in sets:
        args += ["--set", item]
    result = run_helm(helm, *args)
    assert result.returncode == 0, f"helm {' '.join(args)} failed:\n{result.stderr}"
    return tuple(doc for doc in yaml.safe_load_all(result.stdout) if doc)


def template_error(helm: str, *sets: str) -> str:
    """The error `helm template` gives for these --set values (the test fails if it renders)."""
    args = ["template", "elves", str(CHART), "--namespace", NAMESPACE]
    for item in sets:
        args += ["--set", item]
    result = run_helm(helm, *args)
    assert result.returncode != 0, f"helm accepted --set {' '.join(sets)}"
    return result.stderr


def of_kind(objects, kind: str) -> list[dict]:
    return [o for o in objects if o["kind"] == kind]


def named(objects, kind: str, name: str) -> dict:
    matches = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(matches) == 1, f"expected one {kind} {name}, found {len(matches)}"
    return matches[0]


def pod_specs(objects):
    """(object, pod spec) for everything that makes pods."""
    for obj in objects:
        if obj["kind"] == "Pod":
            yield obj, obj["spec"]
        elif obj["kind"] in POD_KINDS:
            yield obj, obj["spec"]["template"]["spec"]


def is_hook(obj: dict) -> bool:
    return "helm.sh/hook" in (obj["metadata"].get("annotations") or {})


def env_of(container: dict) -> dict[str, dict]:
    return {e["name"]: e for e in container.get("env", [])}


ci_values = pytest.mark.parametrize("values_file", CI_VALUES, ids=lambda p: p.stem)


# --- lint and render every ci value set ------------------------------------------------

def test_there_are_ci_value_sets():
    names = {p.stem for p in CI_VALUES}
    assert {"default-values", "external-rabbitmq-postgres-values", "minimal-resources-values",
            "no-monitoring-values"} <= names


@ci_values
def test_helm_lint_is_clean(helm, values_file):
    result = run_helm(helm, "lint", str(CHART), "--strict", "--namespace", NAMESPACE, "--values", str(values_file))
    assert result.returncode == 0, result.stdout + result.stderr


@ci_values
def test_render_gives_plain_valid_objects(helm, values_file):
    objects = render(helm, values_file)
    seen = set()
    dns_name = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
    for obj in objects:
        assert set(obj) >= {"apiVersion", "kind", "metadata"}, obj
        assert not obj["kind"].endswith("List"), "a List is not an object the API server stores"
        name = obj["metadata"]["name"]
        assert dns_name.match(name) and len(name) <= 63, f"{obj['kind']} name {name!r} is not a valid name"
        key = (obj["kind"], obj["metadata"].get("namespace"), name)
        assert key not in seen, f"{key} rendered twice"
        seen.add(key)
        if obj["kind"] not in {"ClusterRole", "ClusterRoleBinding"}:
            # A ci set installs into one fresh namespace (as chart-testing and the dry-run tier do).
            assert obj["metadata"].get("namespace") == NAMESPACE, f"{obj['kind']} {name} is not in the release namespace"
    assert not of_kind(objects, "Ingress"), "nothing is exposed by an Ingress"


# --- values: schema and documentation ---------------------------------------------------

@pytest.mark.parametrize("setting, named_path", [
    ("services.gateway.replicas=three", "/services/gateway/replicas"),
    ("services.registry.resources.limits.memory=lots", "/services/registry/resources/limits/memory"),
    ("rabbitmq.persistence.enabled=maybe", "/rabbitmq/persistence/enabled"),
    ("monitoring.serviceMonitors.interval=often", "/monitoring/serviceMonitors/interval"),
    ("services.ingestor.image.pullPolicy=Sometimes", "/services/ingestor/image/pullPolicy"),
])
def test_schema_rejects_a_wrong_type_naming_the_field(helm, setting, named_path):
    assert named_path in template_error(helm, setting)


@pytest.mark.parametrize("setting, named_path, key", [
    ("services.gateway.replicaz=3", "/services/gateway", "replicaz"),
    ("services.frontend.replicas=1", "/services", "frontend"),
    ("postgresql.auth.pasword=x", "/postgresql/auth", "pasword"),
    ("unknownTopLevel=1", "", "unknownTopLevel"),
])
def test_schema_rejects_an_unknown_key(helm, setting, named_path, key):
    error = template_error(helm, setting)
    assert f"at '{named_path}'" in error and key in error, error


def test_schema_requires_limits(helm):
    error = template_error(helm, "services.gateway.resources.limits=null")
    assert "/services/gateway/resources" in error and "limits" in error, error


def test_validation_collects_every_mistake_in_one_message(helm):
    error = template_error(helm, "services.gateway.image.tag=latest", "rabbitmq.enabled=false",
                           "postgresql.enabled=false", "secrets.jwtSecret=short",
                           "services.ingestor.env.SPRING_RABBITMQ_HOST=elsewhere")
    for expected in ("services.gateway.image.tag: `latest`", "externalRabbitmq.host", "externalRabbitmq.password",
                     "externalPostgresql.host", "secrets.jwtSecret: 5 characters",
                     "services.ingestor.env.SPRING_RABBITMQ_HOST is set by the chart"):
        assert expected in error, f"{expected!r} missing from:\n{error}"


def _documented_params() -> list[str]:
    text = (CHART / "values.yaml").read_text()
    return re.findall(r"^\s*## @param (\S+) ", text, re.MULTILINE)


def _leaf_paths(tree: dict, documented: set[str], prefix: str = "") -> set[str]:
    """Paths of values: a documented path stops the descent (maps like `resources` are documented whole)."""
    paths = set()
    for key, value in tree.items():
        path = prefix + key
        if path in documented or not isinstance(value, dict) or not value:
            paths.add(path)
        else:
            paths |= _leaf_paths(value, documented, path + ".")
    return paths


def _schema_paths(node: dict, definitions: dict, documented: set[str], prefix: str = "") -> set[str]:
    paths = set()
    for key, sub in node.get("properties", {}).items():
        while "$ref" in sub:
            sub = definitions[sub["$ref"].rsplit("/", 1)[1]]
        path = prefix + key
        if path in documented or "properties" not in sub:
            paths.add(path)
        else:
            paths |= _schema_paths(sub, definitions, documented, path + ".")
    return paths


def test_every_value_is_documented_and_typed_and_nothing_else():
    params = _documented_params()
    assert len(params) == len(set(params)), "a value is documented twice"
    documented = set(params)
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    schema = json.loads((CHART / "values.schema.json").read_text())
    in_values = _leaf_paths(values, documented)
    in_schema = _schema_paths(schema, schema.get("definitions", {}), documented)
    assert sorted(in_values - documented) == [], "values without an ## @param line"
    assert sorted(documented - in_values) == [], "## @param lines for values that do not exist"
    assert sorted(in_schema - documented) == [], "schema properties that values.yaml does not have"
    assert sorted(documented - in_schema) == [], "values the schema does not type"


def test_schema_is_strict_everywhere():
    schema = json.loads((CHART / "values.schema.json").read_text())
    loose = []

    def walk(node, where):
        if isinstance(node, dict):
            if node.get("type") == "object" and "properties" in node and node.get("additionalProperties") is not False:
                loose.append(where)
            for key, value in node.items():
                walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{where}/{index}")

    walk(schema, "")
    assert loose == [], "objects that accept unknown keys"


def test_readme_lists_every_value():
    readme = (CHART / "README.md").read_text()
    missing = [p for p in _documented_params() if f"`{p}`" not in readme]
    assert missing == [], "values missing from charts/elves/README.md"


# --- pods: restricted profile, resources, probes, shutdown --------------------------------

@ci_values
def test_every_pod_meets_the_restricted_profile(helm, values_file):
    problems = []
    for obj, spec in pod_specs(render(helm, values_file)):
        where = f"{obj['kind']}/{obj['metadata']['name']}"
        pod_context = spec.get("securityContext") or {}
        if pod_context.get("runAsNonRoot") is not True:
            problems.append(f"{where}: runAsNonRoot is not true")
        if (pod_context.get("seccompProfile") or {}).get("type") != "RuntimeDefault":
            problems.append(f"{where}: seccompProfile is not RuntimeDefault")
        if pod_context.get("runAsUser") == 0:
            problems.append(f"{where}: runs as root")
        for flag in ("hostNetwork", "hostPID", "hostIPC"):
            if spec.get(flag):
                problems.append(f"{where}: {flag}")
        for volume in spec.get("volumes", []):
            kinds = set(volume) - {"name"}
            if not kinds <= RESTRICTED_VOLUMES:
                problems.append(f"{where}: volume {volume['name']} of type {kinds}")
        for container in spec.get("initContainers", []) + spec["containers"]:
            cwhere = f"{where}/{container['name']}"
            context = container.get("securityContext") or {}
            if context.get("allowPrivilegeEscalation") is not False:
                problems.append(f"{cwhere}: allowPrivilegeEscalation is not false")
            if context.get("privileged"):
                problems.append(f"{cwhere}: privileged")
            if (context.get("capabilities") or {}).get("drop") != ["ALL"]:
                problems.append(f"{cwhere}: capabilities do not drop ALL")
            if set((context.get("capabilities") or {}).get("add") or []) - {"NET_BIND_SERVICE"}:
                problems.append(f"{cwhere}: adds capabilities")
            if context.get("readOnlyRootFilesystem") is not True:
                problems.append(f"{cwhere}: root filesystem is writable")
            if context.get("runAsUser") == 0:
                problems.append(f"{cwhere}: runs as root")
            if any(port.get("hostPort") for port in container.get("ports", [])):
                problems.append(f"{cwhere}: hostPort")
    assert problems == []


def test_the_ingestor_asks_for_less_cpu_than_the_synchronous_services(helm):
    # cpu.weight follows the request: under contention the plots yield to the HTTP path.
    def millicores(quantity: str) -> float:
        return float(quantity[:-1]) if quantity.endswith("m") else 1000 * float(quantity)
    requested = {obj["metadata"]["labels"]["app.kubernetes.io/component"]:
                 millicores(spec["containers"][0]["resources"]["requests"]["cpu"])
                 for obj, spec in pod_specs(render(helm)) if obj["kind"] == "Deployment"}
    assert requested["ingestor"] * 4 <= min(requested["gateway"], requested["registry"]), requested


@ci_values
def test_every_container_has_requests_limits_probes_and_a_pinned_image(helm, values_file):
    problems = []
    for obj, spec in pod_specs(render(helm, values_file)):
        for container in spec.get("initContainers", []) + spec["containers"]:
            where = f"{obj['kind']}/{obj['metadata']['name']}/{container['name']}"
            resources = container.get("resources") or {}
            for section in ("requests", "limits"):
                for resource in ("cpu", "memory"):
                    if not (resources.get(section) or {}).get(resource):
                        problems.append(f"{where}: no {section}.{resource}")
            # A helm test pod and an init container run to completion: nothing to probe.
            if not is_hook(obj) and container not in spec.get("initContainers", []):
                for probe in ("readinessProbe", "livenessProbe"):
                    if probe not in container:
                        problems.append(f"{where}: no {probe}")
            image = container["image"]
            tag = image.rsplit("/", 1)[-1].partition(":")[2]
            if not tag or tag == "latest":
                problems.append(f"{where}: image {image} is not pinned to a tag")
            if container.get("imagePullPolicy") != "IfNotPresent":
                problems.append(f"{where}: imagePullPolicy {container.get('imagePullPolicy')}")
    assert problems == []


def test_services_shut_down_gracefully_within_their_grace_period(helm):
    objects = render(helm)
    for name in SERVICES:
        spec = named(objects, "Deployment", name)["spec"]["template"]["spec"]
        container = spec["containers"][0]
        pre_stop = container["lifecycle"]["preStop"]["sleep"]["seconds"]
        env = env_of(container)
        assert env["SERVER_SHUTDOWN"]["value"] == "graceful"
        spring_budget = int(env["SPRING_LIFECYCLE_TIMEOUT_PER_SHUTDOWN_PHASE"]["value"].rstrip("s"))
        drain = int(env.get("ELVES_SHUTDOWN_DRAIN", {"value": "0s"})["value"].rstrip("s"))
        assert spec["terminationGracePeriodSeconds"] > pre_stop + drain + spring_budget, name
        for probe, path in (("readinessProbe", "/actuator/health/readiness"),
                            ("livenessProbe", "/actuator/health/liveness")):
            assert container[probe]["httpGet"] == {"path": path, "port": "management"}, (name, probe)
    for name in ("gateway", "registry"):
        # Clients keep their connections to a pod after it leaves the endpoints, and a paused
        # Tomcat answers 503 on them: during the preStop sleep Tomcat ends each busy one after
        # so many requests (Connection: close), so a rolling restart fails no request. No idle
        # timeout below Tomcat's own: closing an idle connection races with the next request.
        container = named(objects, "Deployment", name)["spec"]["template"]["spec"]["containers"][0]
        env = env_of(container)
        assert "SERVER_TOMCAT_KEEPALIVETIMEOUT" not in env, name
        requests = int(env["SERVER_TOMCAT_MAXKEEPALIVEREQUESTS"]["value"])
        pre_stop = container["lifecycle"]["preStop"]["sleep"]["seconds"]
        assert requests / pre_stop <= 0.5, (name, requests, pre_stop)  # connections busier than this move
        assert env["ELVES_SHUTDOWN_DRAIN"]["value"] == "5s", name  # and quieter ones after SIGTERM
    # Values of a release made before the setting (helm upgrade --reuse-values) still render: Tomcat's own.
    older = render(helm, None, *(f"services.{name}.shutdown.keepAliveRequests=null" for name in SERVICES))
    for name in SERVICES:
        container = named(older, "Deployment", name)["spec"]["template"]["spec"]["containers"][0]
        assert "SERVER_TOMCAT_MAXKEEPALIVEREQUESTS" not in env_of(container), name
    for name in ("rabbitmq", "postgres"):
        assert named(objects, "StatefulSet", name)["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] >= 30
    assert "pg_ctl stop" in " ".join(
        named(objects, "StatefulSet", "postgres")["spec"]["template"]["spec"]["containers"][0]
        ["lifecycle"]["preStop"]["exec"]["command"])


# --- wiring: ports, environment, secrets ------------------------------------------------

def test_services_expose_the_documented_ports(helm):
    objects = render(helm)
    ports = {name: {p["name"]: p["port"] for p in named(objects, "Service", name)["spec"]["ports"]}
             for name in SERVICES}
    assert ports == {"gateway": {"http": 8080, "management": 9090},
                     "registry": {"http": 8081, "management": 9090},
                     "ingestor": {"management": 9090}}
    assert all(named(objects, "Service", n)["spec"]["type"] == "ClusterIP" for n in SERVICES)


def test_services_get_the_environment_of_the_architecture(helm):
    objects = render(helm)
    env = {name: env_of(named(objects, "Deployment", name)["spec"]["template"]["spec"]["containers"][0])
           for name in SERVICES}
    for name in SERVICES:
        assert env[name]["SPRING_RABBITMQ_HOST"]["value"] == f"rabbitmq.{NAMESPACE}.svc"
        assert env[name]["SPRING_RABBITMQ_PASSWORD"]["valueFrom"]["secretKeyRef"] == {
            "name": f"elves-{name}", "key": "rabbitmq-password"}
        assert "-XX:+ExitOnOutOfMemoryError" in env[name]["JAVA_TOOL_OPTIONS"]["value"]
    assert env["gateway"]["ELVES_JWT_SECRET"]["valueFrom"]["secretKeyRef"] == {"name": "elves", "key": "jwt-secret"}
    assert env["gateway"]["ELVES_REGISTRY_URL"]["value"] == f"http://registry.{NAMESPACE}.svc:8081"
    assert env["registry"]["SPRING_DATASOURCE_URL"]["value"] == f"jdbc:postgresql://postgres.{NAMESPACE}.svc:5432/elves"
    assert env["registry"]["SPRING_DATASOURCE_PASSWORD"]["valueFrom"]["secretKeyRef"]["key"] == "postgres-password"
    assert "SPRING_DATASOURCE_URL" not in env["gateway"] and "ELVES_JWT_SECRET" not in env["registry"]
    ingestor = named(objects, "Deployment", "ingestor")["spec"]["template"]["spec"]
    assert env["ingestor"]["ELVES_INGESTOR_SCRATCH_DIR"]["value"] == "/scratch"
    assert {"name": "scratch", "mountPath": "/scratch"} in ingestor["containers"][0]["volumeMounts"]
    assert "emptyDir" in next(v for v in ingestor["volumes"] if v["name"] == "scratch")


def test_service_settings_from_values_reach_the_container(helm):
    objects = render(helm, CHART / "ci" / "all-features-values.yaml")
    env = env_of(named(objects, "Deployment", "ingestor")["spec"]["template"]["spec"]["containers"][0])
    assert env["ELVES_INGESTOR_CONCURRENCY"]["value"] == "4"
    assert named(objects, "Deployment", "ingestor")["spec"]["replicas"] == 3


def test_external_rabbitmq_and_postgresql_replace_the_statefulsets(helm):
    objects = render(helm, CHART / "ci" / "external-rabbitmq-postgres-values.yaml")
    assert of_kind(objects, "StatefulSet") == []
    registry = env_of(named(objects, "Deployment", "registry")["spec"]["template"]["spec"]["containers"][0])
    assert registry["SPRING_RABBITMQ_HOST"]["value"] == "rabbitmq.shared-infra.svc"
    assert registry["SPRING_RABBITMQ_PASSWORD"]["valueFrom"]["secretKeyRef"] == {"name": "shared-rabbitmq",
                                                                                   "key": "password"}
    assert registry["SPRING_DATASOURCE_URL"]["value"] == "jdbc:postgresql://postgres.shared-infra.svc:5432/elves_bench"
    assert registry["SPRING_DATASOURCE_PASSWORD"]["valueFrom"]["secretKeyRef"] == {"name": "elves",
                                                                                     "key": "postgres-password"}
    secret = named(objects, "Secret", "elves")
    assert set(secret["data"]) == {"jwt-secret", "service-key", "postgres-password"}


def test_generated_secret_is_kept_and_explicit_values_win(helm):
    objects = render(helm)
    secret = named(objects, "Secret", "elves")
    assert secret["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    assert set(secret["data"]) == {"jwt-secret", "service-key", "postgres-password"}
    import base64
    assert all(len(base64.b64decode(v)) >= 32 for v in secret["data"].values())
    given = named(render(helm, None, "postgresql.auth.password=a-fixed-postgres-password"), "Secret", "elves")
    assert base64.b64decode(given["data"]["postgres-password"]).decode() == "a-fixed-postgres-password"
    for name in ("gateway", "registry"):
        env = env_of(named(objects, "Deployment", name)["spec"]["template"]["spec"]["containers"][0])
        assert env["ELVES_SERVICE_KEY"]["valueFrom"]["secretKeyRef"] == {"name": "elves", "key": "service-key"}


def test_an_existing_secret_replaces_the_generated_one_everywhere(helm):
    objects = render(helm, None, "secrets.existingSecret=gitops-secrets")
    assert not of_kind(objects, "Secret"), "no Secret is rendered: nothing new on a render"
    refs = [e["valueFrom"]["secretKeyRef"] for _, spec in pod_specs(objects) for c in spec["containers"]
            for e in c.get("env", []) if "secretKeyRef" in e.get("valueFrom", {})]
    assert refs and {r["name"] for r in refs} == {"gitops-secrets"}
    assert {r["key"] for r in refs} >= {"jwt-secret", "service-key", "rabbitmq-gateway-password",
                                        "postgres-registry-password", "postgres-migrator-password"}
    secret_rules = [rule for _, rule in _rules(objects, "Role") if "secrets" in rule["resources"]]
    assert [rule["resourceNames"] for rule in secret_rules] == [["gitops-secrets"]]
    error = template_error(helm, "secrets.existingSecret=gitops-secrets", "secrets.jwtSecret=" + "x" * 40)
    assert "secrets.jwtSecret is set, but secrets.existingSecret is used instead" in error


def test_images_follow_app_version_and_registry(helm):
    objects = render(helm, CHART / "ci" / "all-features-values.yaml")
    images = {c["image"] for _, spec in pod_specs(objects) for c in spec["containers"]}
    assert "registry.example.internal:5000/elves-gateway:0.1.0" in images
    assert "registry.example.internal:5000/elves-ingestor:0.1.0-rc1" in images
    assert all(i.startswith("registry.example.internal:5000/") for i in images)


# --- operator: command and least privilege ---------------------------------------------

# An operator serving two namespaces, with kopf peering (objects outside the release
# namespace, so not part of a ci value set).
SCOPED_OPERATOR = ("operator.watchNamespaces={elves,load-tests}", "operator.peering=elves")


def _rules(objects, kind):
    return [(o["metadata"]["name"], rule) for o in of_kind(objects, kind) for rule in o["rules"]]


def test_operator_caps_follow_values(helm):
    objects = render(helm, None, "operator.limits.maxReplicas=5", "operator.limits.maxMemory=2Gi")
    env = env_of(named(objects, "Deployment", "elves-operator")["spec"]["template"]["spec"]["containers"][0])
    assert (env["ELVES_MAX_REPLICAS"]["value"], env["ELVES_MAX_MEMORY"]["value"]) == ("5", "2Gi")


def test_operator_runs_kopf_on_the_handlers_module(helm):
    command = named(render(helm), "Deployment", "elves-operator")["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[:3] == ["kopf", "run", "--module=elves.k8s.handlers"]
    assert "--all-namespaces" in command and "--standalone" in command
    scoped = named(render(helm, None, *SCOPED_OPERATOR), "Deployment", "elves-operator")
    scoped_command = scoped["spec"]["template"]["spec"]["containers"][0]["command"]
    assert {"--namespace=elves", "--namespace=load-tests", "--peering=elves"} <= set(scoped_command)
    assert "--all-namespaces" not in scoped_command


@ci_values
def test_operator_rbac_is_least_privilege(helm, values_file):
    objects = render(helm, values_file)
    rules = _rules(objects, "ClusterRole") + _rules(objects, "Role")
    for name, rule in rules:
        assert "*" not in rule["verbs"] and "*" not in rule["resources"] and "*" not in rule["apiGroups"], name
        assert not {"escalate", "bind", "impersonate"} & set(rule["verbs"]), name
        if "secrets" in rule["resources"] and "get" in rule["verbs"]:
            assert rule.get("resourceNames") == ["elves"] and rule["verbs"] == ["get"], name
    bound_cluster_wide = {o["roleRef"]["name"] for o in of_kind(objects, "ClusterRoleBinding")}
    cluster_resources = {r for name, rule in _rules(objects, "ClusterRole") if name in bound_cluster_wide
                         for r in rule["resources"]}
    assert not cluster_resources & {"secrets", "deployments", "deployments/scale", "statefulsets"}, \
        "the system's workloads and Secret are reachable only in its namespace"
    cluster_pod_verbs = {v for _, rule in _rules(objects, "ClusterRole") if "pods" in rule["resources"]
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
    for verb in ("create", "get", "list", "watch", "delete"):
        assert allowed("ClusterRole", "k6.io", "testruns", verb), verb
    assert allowed("ClusterRole", "k6.io", "testruns/status", "get")
    assert allowed("ClusterRole", "", "configmaps", "get") and allowed("ClusterRole", "", "events", "create")
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
    writes = named(objects, "ClusterRole", "elves-elves-operator-run-objects")
    assert [(rule["resources"], rule["verbs"]) for rule in writes["rules"]] == \
        [(["configmaps", "secrets"], ["create", "update"])]
    bindings = [o for o in of_kind(objects, "RoleBinding") if o["roleRef"]["name"] == writes["metadata"]["name"]]
    assert [b["metadata"]["namespace"] for b in bindings] == [NAMESPACE]


@ci_values
def test_operator_patches_deletes_and_writes_only_what_it_must(helm, values_file):
    """The services' Deployments by name; ConfigMap and Secret writes never through a cluster-wide
    binding, and the one Secret it reads by name."""
    objects = render(helm, values_file)
    for _, rule in _rules(objects, "Role"):
        if {"deployments", "deployments/scale"} & set(rule["resources"]):
            assert rule["resourceNames"] == sorted(SERVICES), rule
        if "statefulsets" in rule["resources"] or ("leases" in rule["resources"] and "update" in rule["verbs"]):
            assert rule.get("resourceNames"), rule
    bound_cluster_wide = {o["roleRef"]["name"] for o in of_kind(objects, "ClusterRoleBinding")}
    for name, rule in _rules(objects, "ClusterRole"):
        if name in bound_cluster_wide and {"configmaps", "secrets"} & set(rule["resources"]):
            assert set(rule["verbs"]) <= {"get", "list", "watch"}, (name, rule)
            assert "secrets" not in rule["resources"], (name, rule)


def test_load_test_namespaces_get_run_object_writes_there_only(helm):
    objects = render(helm, None, "operator.loadTestNamespaces={default,team-a}")
    bindings = [o for o in of_kind(objects, "RoleBinding") if o["metadata"]["name"] == "elves-operator-run-objects"]
    assert sorted(b["metadata"]["namespace"] for b in bindings) == ["default", NAMESPACE, "team-a"]


def test_namespace_list_gets_roles_not_cluster_roles(helm):
    objects = render(helm, None, *SCOPED_OPERATOR)
    cluster_resources = {r for _, rule in _rules(objects, "ClusterRole") for r in rule["resources"]}
    assert "loadtests" not in cluster_resources and "testruns" not in cluster_resources
    namespaces = {o["metadata"]["namespace"] for o in of_kind(objects, "Role")
                  if any("loadtests" in r["resources"] for r in o["rules"])}
    assert namespaces == {"elves", "load-tests"}
    assert any("kopfpeerings" in r["resources"] for _, r in _rules(objects, "Role"))


# --- network policies -------------------------------------------------------------------

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


# --- monitoring: ServiceMonitors, rules, dashboards ------------------------------------

def test_service_monitors_carry_the_release_label_and_scrape_queue_metrics(helm):
    objects = render(helm)
    monitors = {o["metadata"]["name"]: o for o in of_kind(objects, "ServiceMonitor")}
    assert set(monitors) == {*SERVICES, "rabbitmq"}
    assert all(m["metadata"]["labels"]["release"] == "kube-prometheus-stack" for m in monitors.values())
    for name in SERVICES:
        assert monitors[name]["spec"]["endpoints"][0]["path"] == "/actuator/prometheus"
        assert monitors[name]["spec"]["endpoints"][0]["port"] == "management"
    endpoints = {e["path"]: e for e in monitors["rabbitmq"]["spec"]["endpoints"]}
    assert set(endpoints) == {"/metrics", "/metrics/detailed"}
    assert "queue_coarse_metrics" in endpoints["/metrics/detailed"]["params"]["family"]
    assert named(objects, "PrometheusRule", "elves-alerts")["metadata"]["labels"]["release"] == "kube-prometheus-stack"


def test_no_monitoring_objects_when_switched_off(helm):
    objects = render(helm, CHART / "ci" / "no-monitoring-values.yaml")
    assert not [o for o in objects if o["apiVersion"].startswith("monitoring.coreos.com")]
    assert not of_kind(objects, "NetworkPolicy")
    assert not [o for o in of_kind(objects, "ConfigMap") if o["metadata"].get("labels", {}).get("grafana_dashboard")]


def test_monitoring_objects_only_where_the_cluster_serves_their_api(helm):
    def monitoring_kinds(api_versions):
        return sorted({o["kind"] for o in render(helm, api_versions=api_versions)
                       if o["apiVersion"].startswith("monitoring.coreos.com/")})

    assert monitoring_kinds(()) == []
    assert monitoring_kinds((K6_API,)) == []
    assert monitoring_kinds((MONITORING_API,)) == ["PrometheusRule", "ServiceMonitor"]


def render_notes(helm: str, tmp_path: Path, *api_versions: str, sets: tuple[str, ...] = ()) -> str:
    """NOTES.txt as `helm install` prints it on a cluster serving `api_versions`. `helm template`
    leaves NOTES.txt out and `helm install --dry-run` needs a cluster, so a copy of the chart
    renders the same text through `tpl` into a ConfigMap."""
    copy = tmp_path / "elves"
    shutil.copytree(CHART, copy, ignore=shutil.ignore_patterns("ci"))
    (copy / "notes.txt").write_text((CHART / "templates" / "NOTES.txt").read_text())
    (copy / "templates" / "zz-notes.yaml").write_text(
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: notes}\n'
        'data: {notes: {{ tpl (.Files.Get "notes.txt") . | quote }}}\n')
    args = ["template", "elves", str(copy), "--namespace", NAMESPACE, "--show-only", "templates/zz-notes.yaml",
            *_api_version_args(api_versions), *(arg for item in sets for arg in ("--set", item))]
    result = run_helm(helm, *args)
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)["data"]["notes"]


def _upstream_chart_versions() -> dict[str, str]:
    text = (REPO / "tools" / "cluster" / "versions.env").read_text()
    return dict(re.findall(r"^([A-Z0-9_]+)=(\S+)$", text, re.MULTILINE))


def test_notes_on_a_bare_cluster_name_what_is_missing_and_the_command_that_adds_it(helm, tmp_path):
    notes = render_notes(helm, tmp_path)
    pins = _upstream_chart_versions()
    assert "MISSING from this cluster" in notes
    commands = notes.replace(" \\\n    ", " ").splitlines()  # continuation lines joined, as a shell reads them
    monitoring = [line for line in commands if "helm upgrade --install kube-prometheus-stack" in line]
    k6 = [line for line in commands if "helm upgrade --install k6-operator" in line]
    assert len(monitoring) == len(k6) == 1
    # The same upstream chart, repository and version deployments.sh installs.
    assert f"--repo {pins['KUBE_PROMETHEUS_STACK_CHART_REPO']} --version {pins['KUBE_PROMETHEUS_STACK_CHART_VERSION']}" in monitoring[0]
    assert "-f tools/cluster/kube-prometheus-stack-values.yaml" in monitoring[0]
    assert f"--repo {pins['K6_OPERATOR_CHART_REPO']} --version {pins['K6_OPERATOR_CHART_VERSION']}" in k6[0]
    assert f"helm upgrade elves charts/elves -n {NAMESPACE} --reuse-values" in notes


def test_notes_say_nothing_is_missing_where_both_apis_exist(helm, tmp_path):
    notes = render_notes(helm, tmp_path, *CLUSTER_API_VERSIONS)
    assert "MISSING" not in notes and "release=kube-prometheus-stack" in notes
    bare_without_operator_or_monitoring = render_notes(
        helm, tmp_path / "off", sets=("operator.enabled=false", "monitoring.serviceMonitors.enabled=false",
                                      "monitoring.prometheusRules.enabled=false"))
    assert "MISSING" not in bare_without_operator_or_monitoring


def test_notes_tell_own_kube_prometheus_stack_users_the_sidecar_settings(helm, tmp_path):
    notes = render_notes(helm, tmp_path, *CLUSTER_API_VERSIONS)
    sidecar = yaml.safe_load((REPO / "tools" / "cluster" / "kube-prometheus-stack-values.yaml").read_text())[
        "grafana"]["sidecar"]["dashboards"]
    for setting in ("enabled=true", "label=grafana_dashboard", f"searchNamespace={sidecar['searchNamespace']}",
                    f"folderAnnotation={sidecar['folderAnnotation']}",
                    f"provider.foldersFromFilesStructure={str(sidecar['provider']['foldersFromFilesStructure']).lower()}"):
        assert f"grafana.sidecar.dashboards.{setting}" in notes, setting


def test_grafana_credentials_come_from_a_secret(helm):
    operator = named(render(helm, None, "operator.grafanaSecret=grafana-credentials"), "Deployment", "elves-operator")
    env = env_of(operator["spec"]["template"]["spec"]["containers"][0])
    for variable, key in (("ELVES_GRAFANA_TOKEN", "token"), ("ELVES_GRAFANA_USER", "user"),
                          ("ELVES_GRAFANA_PASSWORD", "password")):
        assert env[variable]["valueFrom"]["secretKeyRef"] == {"name": "grafana-credentials", "key": key, "optional": True}
    plain = env_of(named(render(helm), "Deployment", "elves-operator")["spec"]["template"]["spec"]["containers"][0])
    assert not {"ELVES_GRAFANA_TOKEN", "ELVES_GRAFANA_USER", "ELVES_GRAFANA_PASSWORD"} & set(plain)


def _alert_exprs(objects) -> dict[str, str]:
    rule = named(objects, "PrometheusRule", "elves-alerts")
    return {r["alert"]: r["expr"] for group in rule["spec"]["groups"] for r in group["rules"]}


def _engine_promql():
    try:
        from elves.engine import promql
    except ImportError as error:  # the engine's query module is the reference
        _missing(f"elves.engine.promql is not importable ({error}); install the package: pip install -e operator")
    return promql


def test_alerts_use_the_engines_queries(helm):
    promql = _engine_promql()
    from elves.constants import DEAD_LETTER_QUEUES, DEPLOYMENTS, WORK_QUEUES

    containers = DEPLOYMENTS + ("rabbitmq", "postgres")
    consumers = promql.selector("rabbitmq_detailed_queue_consumers", queue="~" + promql.regex_of(WORK_QUEUES))
    expected = {
        "ElvesQueuePileUp": f"{promql.queue_depth(WORK_QUEUES)} > 1000",
        "ElvesQueueWithoutConsumers":
            f"(sum by (queue) ({consumers}) == 0) and on (queue) ({promql.queue_depth(WORK_QUEUES)} > 0)",
        "ElvesMessagesDeadLettered": f"{promql.queue_depth(DEAD_LETTER_QUEUES)} > 0",
        "ElvesContainerCrashLooping": f"{promql.restarts('15m', containers)} >= 3",
        "ElvesContainerOOMKilled": f"{promql.oom_kills('10m', containers)} > 0",
    }
    assert _alert_exprs(render(helm)) == expected


def test_alert_thresholds_follow_values(helm):
    exprs = _alert_exprs(render(helm, None, "monitoring.prometheusRules.queuePileUpMessages=250",
                                "monitoring.prometheusRules.crashLoopRestarts=5"))
    assert exprs["ElvesQueuePileUp"].endswith(" > 250")
    assert exprs["ElvesContainerCrashLooping"].endswith(" >= 5")


def test_alerts_pass_promtool(helm, tmp_path):
    promtool = shutil.which("promtool")
    if promtool is None:
        _missing("promtool not found (Debian package prometheus; tools/install-local-deps.sh installs it)")
    rule = named(render(helm), "PrometheusRule", "elves-alerts")
    rules_file = tmp_path / "elves.rules.yaml"
    rules_file.write_text(yaml.safe_dump(rule["spec"]))
    result = subprocess.run([promtool, "check", "rules", str(rules_file)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_dashboards_are_valid_json_with_queries():
    assert {p.stem for p in DASHBOARDS} == {"queue-pileup", "load", "services"}
    uids = set()
    for path in DASHBOARDS:
        dashboard = json.loads(path.read_text())
        assert dashboard["uid"] not in uids
        uids.add(dashboard["uid"])
        targets = [t for panel in dashboard["panels"] for t in panel.get("targets", [])]
        assert targets and all(t["expr"].strip() for t in targets), path.name


def test_pileup_dashboard_shows_phases_faults_and_the_review_panels():
    dashboard = json.loads((CHART / "dashboards" / "queue-pileup.json").read_text())
    annotation_names = {a["name"] for a in dashboard["annotations"]["list"]}
    assert {"LoadTest phases and faults", "Replica changes"} <= annotation_names
    queries = " ".join(t["expr"] for p in dashboard["panels"] for t in p.get("targets", []))
    for metric in ("rabbitmq_detailed_queue_messages_ready", "rabbitmq_detailed_queue_messages_unacked",
                   "rabbitmq_detailed_queue_consumers", "elves_messages_published_total",
                   "rabbitmq_global_messages_acknowledged_total", "kube_pod_container_status_restarts_total",
                   "kube_pod_container_status_last_terminated_reason", "kube_deployment_spec_replicas"):
        assert metric in queries, metric


def test_pileup_dashboard_shows_per_queue_rates_their_difference_and_consumers():
    promql = _engine_promql()
    dashboard = json.loads((CHART / "dashboards" / "queue-pileup.json").read_text())
    panels = {p["title"]: [t["expr"] for t in p.get("targets", [])] for p in dashboard["panels"]}
    scoped = 'namespace=~"$namespace"'
    wanted = {
        "Messages per queue (ready + unacked)": promql.queue_depth(),
        "Published per queue (broker)": promql.queue_publish_rate("$__rate_interval"),
        "Delivered and acknowledged per queue (broker)": promql.queue_deliver_rate("$__rate_interval"),
        "Pile-up rate per queue (published - acknowledged)": promql.queue_pileup_rate("$__rate_interval"),
    }
    for title, expr in wanted.items():
        # The engine's query, limited to the dashboard's namespace.
        assert panels[title][0].replace(scoped + ",", "") == expr, title
    assert promql.queue_ack_rate("$__rate_interval") == panels["Delivered and acknowledged per queue (broker)"][1] \
        .replace(scoped + ",", "")
    assert any("rabbitmq_detailed_queue_consumers" in e for e in panels["Consumers per queue"])
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["namespace"]["includeAll"] and variables["namespace"]["allValue"] == ".*"
    # Every series selector of every panel and annotation is limited to the namespace.
    expressions = [e for exprs in panels.values() for e in exprs]
    expressions += [a["expr"] for a in dashboard["annotations"]["list"] if "expr" in a]
    for expr in expressions:
        selectors = re.findall(r"\{[^{}]*\}", expr)
        assert selectors and all(scoped in s for s in selectors), expr
        outside_selectors = re.sub(r"\{[^{}]*\}", "{}", expr)
        assert not re.search(r"\b(rabbitmq|elves|kube)_\w+(?![\w{])", outside_selectors), \
            f"a metric without a selector: {expr}"


def test_broker_scrape_has_the_families_of_the_rate_panels(helm):
    from elves.constants import RABBITMQ_DETAILED_FAMILIES
    monitor = named(render(helm), "ServiceMonitor", "rabbitmq")
    detailed = [e for e in monitor["spec"]["endpoints"] if e["path"] == "/metrics/detailed"]
    assert detailed[0]["params"]["family"] == list(RABBITMQ_DETAILED_FAMILIES)


def test_dashboards_and_alert_queries_are_built_from_the_engines_queries():
    _engine_promql()
    build = CHART / "dashboards" / "build.py"
    result = subprocess.run([sys.executable, str(build), "--check"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_dashboards_ship_as_labelled_config_maps(helm):
    maps = [o for o in of_kind(render(helm), "ConfigMap") if o["metadata"]["labels"].get("grafana_dashboard") == "1"]
    shipped = {key: json.loads(text) for m in maps for key, text in m["data"].items()}
    assert shipped == {p.name: json.loads(p.read_text()) for p in DASHBOARDS}


def test_dashboards_can_live_in_grafanas_namespace(helm):
    objects = render(helm, None, "monitoring.dashboards.namespace=monitoring")
    maps = [o for o in of_kind(objects, "ConfigMap") if o["metadata"]["labels"].get("grafana_dashboard") == "1"]
    assert len(maps) == len(DASHBOARDS) and {m["metadata"]["namespace"] for m in maps} == {"monitoring"}


def test_a_broken_dashboard_fails_the_render(helm, tmp_path):
    copy = tmp_path / "elves"
    shutil.copytree(CHART, copy, ignore=shutil.ignore_patterns("ci"))
    (copy / "dashboards" / "load.json").write_text('{"title": "cut short"')
    result = run_helm(helm, "template", "elves", str(copy), "--namespace", NAMESPACE)
    assert result.returncode != 0 and "dashboards/load.json is not valid JSON" in result.stderr


# --- helm test ----------------------------------------------------------------------------

def test_helm_test_checks_the_gateway_answers_401_without_a_token(helm):
    pods = [o for o in of_kind(render(helm), "Pod") if o["metadata"]["annotations"].get("helm.sh/hook") == "test"]
    assert len(pods) == 1
    container = pods[0]["spec"]["containers"][0]
    assert container["command"][:2] == ["python3", "-c"]
    script = container["command"][2]
    compile(script, "gateway-auth", "exec")
    assert '("no token", None, lambda code: code == 401)' in script
    assert env_of(container)["GATEWAY_URL"]["value"] == f"http://gateway.{NAMESPACE}.svc:8080/api/v1/users/me"


# --- Chart.yaml metadata (Artifact Hub) ----------------------------------------------------

def _chart_metadata() -> dict:
    return yaml.safe_load((CHART / "Chart.yaml").read_text())


def test_chart_names_its_home_sources_and_licence():
    chart = _chart_metadata()
    assert chart["home"].startswith("https://") and chart["home"] in chart["sources"]
    assert chart["annotations"]["artifacthub.io/license"] == "Apache-2.0"
    assert "Apache License" in (REPO / "LICENSE").read_text() and "Version 2.0" in (REPO / "LICENSE").read_text()
    for key in ("crds", "crdsExamples", "images", "license", "links", "changes"):
        assert f"artifacthub.io/{key}" in chart["annotations"], key
    links = yaml.safe_load(chart["annotations"]["artifacthub.io/links"])
    changes = yaml.safe_load(chart["annotations"]["artifacthub.io/changes"])
    assert all(link["url"].startswith("https://") for link in links)
    assert changes and all(c["kind"] in {"added", "changed", "deprecated", "removed", "fixed", "security"}
                           for c in changes)


def test_chart_crd_annotations_match_the_crd_and_the_quickstart():
    annotations = _chart_metadata()["annotations"]
    crds = yaml.safe_load(annotations["artifacthub.io/crds"])
    shipped = [yaml.safe_load(p.read_text()) for p in sorted((CHART / "crds").glob("*.yaml"))]
    assert [(c["name"], c["kind"], c["version"]) for c in crds] == [
        (d["metadata"]["name"], d["spec"]["names"]["kind"], v["name"])
        for d in shipped for v in d["spec"]["versions"] if v.get("storage")]
    examples = yaml.safe_load(annotations["artifacthub.io/crdsExamples"])
    assert examples == [yaml.safe_load((REPO / "loadtests" / "examples" / "quickstart.yaml").read_text())]


def test_chart_image_annotation_lists_every_image_it_runs(helm):
    listed = {i["image"] for i in yaml.safe_load(_chart_metadata()["annotations"]["artifacthub.io/images"])}
    rendered = {c["image"] for _, spec in pod_specs(render(helm))
                for c in spec.get("initContainers", []) + spec["containers"]}
    from elves.k8s.settings import DEFAULT_K6_IMAGE  # what the operator gives TestRuns' runners
    assert listed == rendered | {DEFAULT_K6_IMAGE}
