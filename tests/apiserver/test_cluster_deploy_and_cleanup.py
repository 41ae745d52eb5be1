"""tools/cluster/deploy.sh and cleanup.sh (what `./deployments.sh` and `./cleanup.sh` run in
cluster mode) against a real kube-apiserver, with the namespace and garbage-collector
controllers of a real kube-controller-manager so that namespaces really go away.

There is no kubelet, so pods never run: deploy.sh runs with ELVES_HELM_WAIT=0 and the tests
stop where the chart's objects exist. This machine reaches no chart repository, so
kube-prometheus-stack and k6-operator come from stand-in charts of the same names and pinned
versions, served on loopback: they carry the real upstream CRDs (from tools/fetch-crds.sh),
refuse to install the way the real k6-operator chart does when its namespace exists, and
record the values they were given.

The control plane is this module's own (not the session's), because these tests delete the
LoadTest CRD and namespaces that other tests of the tier rely on.
"""

from __future__ import annotations

import base64
import functools
import http.server
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from prerequisites import require

from . import control_plane as cp

CLUSTER = cp.REPO / "tools" / "cluster"
NAMESPACE = "elves"
MONITORING_CRDS = ("servicemonitors.monitoring.coreos.com", "prometheusrules.monitoring.coreos.com")
INSTALLED_BY = "elves.dev/installed-by"
# The pods never run here; the deadline is for API calls and namespace deletion.
SCRIPT_TIMEOUT = "2m"


def cluster_versions() -> dict[str, str]:
    """tools/cluster/versions.env as bash sees it (it sources tools/versions.env)."""
    out = subprocess.run(["bash", "-c", f"set -a; source {CLUSTER / 'versions.env'}; env"],
                         capture_output=True, text=True, check=True, env={}).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[cp.ControlPlane]:
    controller_manager = cp.kubernetes_bin_dir() / "kube-controller-manager"
    missing = cp.missing_prerequisites()
    if not controller_manager.exists():
        missing.append(f"{controller_manager} is not built (run tools/build-kubernetes.sh)")
    if cp.helm_binary() is None:
        missing.append("helm is not built (run tools/install-helm.sh)")
    require(not missing, "; ".join(missing))
    workdir = tmp_path_factory.mktemp("cluster-scripts")
    plane = cp.start(workdir, tie_to_parent=True)
    # Only what deleting a namespace and uninstalling a release need: no pods are made.
    manager = cp.spawn([str(controller_manager), f"--kubeconfig={plane.kubeconfig}",
                        "--controllers=namespace-controller,garbage-collector-controller",
                        "--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0",
                        "--use-service-account-credentials=false"],
                       workdir / "kube-controller-manager.log", tie_to_parent=True)
    try:
        yield plane
    finally:
        if cp.is_our_process(manager.pid, str(workdir)):
            cp.terminate(manager.pid)
        cp.stop(workdir)


def stand_in_chart(root: Path, name: str, version: str, crds: dict[str, Path], like_k6_operator: bool) -> Path:
    """A chart named like the upstream one: its CRDs and a ConfigMap recording its values.
    Like k6-operator's, the CRDs can be templates, and a Namespace template (namespace.create,
    on by default) makes the install fail when the namespace exists already."""
    chart = root / name
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text(yaml.safe_dump(
        {"apiVersion": "v2", "name": name, "version": version, "description": f"stand-in for {name}"}))
    (chart / "templates" / "values.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-values\n"
        "data:\n  values.json: {{ toJson .Values | quote }}\n")
    target = chart / ("files" if like_k6_operator else "crds")
    target.mkdir()
    for file_name, source in crds.items():
        shutil.copy(source, target / file_name)
    if like_k6_operator:
        (chart / "values.yaml").write_text("namespace:\n  create: true\n")
        (chart / "templates" / "namespace.yaml").write_text(
            "{{- if .Values.namespace.create }}\napiVersion: v1\nkind: Namespace\n"
            "metadata:\n  name: {{ .Release.Namespace }}\n{{- end }}\n")
        (chart / "templates" / "crds.yaml").write_text(
            '{{- range $path, $_ := .Files.Glob "files/*.yaml" }}\n---\n{{ $.Files.Get $path }}\n{{- end }}\n')
    return chart


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def chart_repo(plane: cp.ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Helm chart repository on 127.0.0.1 with the stand-ins at the pinned versions."""
    versions = cluster_versions()
    prometheus_crds, k6_crds = cp.upstream_crd_dirs()[:2]
    sources = tmp_path_factory.mktemp("stand-in-charts")
    served = tmp_path_factory.mktemp("chart-repo")
    charts = [
        stand_in_chart(sources, "kube-prometheus-stack", versions["KUBE_PROMETHEUS_STACK_CHART_VERSION"],
                       {f"{crd}.yaml": prometheus_crds / f"monitoring.coreos.com_{crd.split('.')[0]}.yaml"
                        for crd in MONITORING_CRDS}, like_k6_operator=False),
        stand_in_chart(sources, "k6-operator", versions["K6_OPERATOR_CHART_VERSION"],
                       {"testruns.yaml": k6_crds / "k6.io_testruns.yaml"}, like_k6_operator=True),
    ]
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(served)))
    url = f"http://127.0.0.1:{server.server_address[1]}"
    helm = cp.helm_binary()
    for chart in charts:
        subprocess.run([helm, "package", str(chart), "--destination", str(served)],
                       check=True, capture_output=True, text=True)
    subprocess.run([helm, "repo", "index", str(served), "--url", url], check=True, capture_output=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield url
    finally:
        server.shutdown()
        thread.join()


@pytest.fixture
def env(plane: cp.ControlPlane, chart_repo: str, tmp_path: Path) -> dict[str, str]:
    """The environment a user would run the scripts with, pointed at this module's cluster."""
    helm_home = tmp_path / "helm"
    return {
        **os.environ,
        "KUBECONFIG": plane.kubeconfig,
        "ELVES_KUBECTL": plane.kubectl_path,
        "ELVES_HELM": cp.helm_binary(),
        "ELVES_HELM_WAIT": "0",
        "ELVES_TIMEOUT": SCRIPT_TIMEOUT,
        "ELVES_MONITORING_CHART_REPO": chart_repo,
        "ELVES_K6_OPERATOR_CHART_REPO": chart_repo,
        # Helm's repository cache and settings stay out of the user's home.
        "HELM_CACHE_HOME": str(helm_home / "cache"),
        "HELM_CONFIG_HOME": str(helm_home / "config"),
        "HELM_DATA_HOME": str(helm_home / "data"),
    }


@pytest.fixture(autouse=True)
def leaves_nothing_behind(env: dict[str, str], plane: cp.ControlPlane) -> Iterator[None]:
    """Every test starts from an empty cluster: cleanup after it, whatever it left."""
    yield
    result = script("cleanup", "--force", env=env)
    assert result.returncode == 0, result.stderr
    for namespace in ("elves", "monitoring", "k6-operator-system"):
        kubectl(plane, "delete", "namespace", namespace, "--ignore-not-found")
    helm(env, "uninstall", "k6-operator", "-n", "k6-operator-system", "--ignore-not-found")


# --------------------------------------------------------------------------- helpers


def script(name: str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    # The timeout keeps a hung script from hanging the suite; nothing here is timed.
    return subprocess.run([str(CLUSTER / f"{name}.sh"), *args], capture_output=True, text=True,
                          env=env, timeout=600)


def kubectl(plane: cp.ControlPlane, *args: str) -> str:
    return plane.kubectl(*args).stdout


def get(plane: cp.ControlPlane, *args: str) -> dict:
    return json.loads(kubectl(plane, "get", *args, "-o", "json"))


def names(plane: cp.ControlPlane, *args: str) -> set[str]:
    return {item["metadata"]["name"] for item in get(plane, *args)["items"]}


def helm(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([env["ELVES_HELM"], *args], capture_output=True, text=True, env=env, timeout=300)


def releases(env: dict[str, str]) -> dict[str, dict]:
    listed = json.loads(helm(env, "list", "--all-namespaces", "--all", "-o", "json").stdout)
    return {f"{r['namespace']}/{r['name']}": r for r in listed}


def operator_env(plane: cp.ControlPlane) -> dict[str, str]:
    deployment = get(plane, "deployment", "elves-operator", "-n", NAMESPACE)
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value") for e in container["env"]}


def grafana_secret_refs(plane: cp.ControlPlane) -> dict[str, str]:
    """The operator's environment variables read from Secrets: variable -> Secret name."""
    deployment = get(plane, "deployment", "elves-operator", "-n", NAMESPACE)
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e["valueFrom"]["secretKeyRef"]["name"] for e in container["env"]
            if "secretKeyRef" in e.get("valueFrom", {})}


def deployed(result: subprocess.CompletedProcess) -> None:
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"


# --------------------------------------------------------------------------- tests


def test_a_plain_helm_install_on_a_bare_cluster_leaves_monitoring_out_and_names_what_is_missing(
        plane: cp.ControlPlane, env: dict[str, str]) -> None:
    # What a user without kube-prometheus-stack or k6-operator types, not deployments.sh.
    assert not names(plane, "crd") & {"testruns.k6.io", *MONITORING_CRDS}
    installed = helm(env, "install", "elves", str(cp.REPO / "charts" / "elves"), "--namespace", NAMESPACE,
                     "--dry-run=server", "--output", "json")
    assert installed.returncode == 0, installed.stderr
    release = json.loads(installed.stdout)
    objects = [doc for doc in yaml.safe_load_all(release["manifest"]) if doc]
    assert objects and not [o for o in objects if o["apiVersion"].startswith("monitoring.coreos.com/")]
    notes = release["info"]["notes"]
    assert "MISSING from this cluster" in notes
    assert "helm upgrade --install kube-prometheus-stack" in notes and "helm upgrade --install k6-operator" in notes

    # Every object of the bare install is one this API server stores, in a namespace that
    # enforces the restricted Pod Security Standard.
    kubectl(plane, "create", "namespace", NAMESPACE)
    kubectl(plane, "label", "namespace", NAMESPACE, "pod-security.kubernetes.io/enforce=restricted")
    applied = plane.kubectl("apply", "--dry-run=server", "-n", NAMESPACE, "-f", "-",
                            stdin=release["manifest"], check=False)
    assert applied.returncode == 0, applied.stderr
    assert len([line for line in applied.stdout.splitlines() if line.endswith("(server dry run)")]) == len(objects)


def test_deploy_installs_monitoring_k6_operator_and_the_chart_and_cleanup_removes_all(
        plane: cp.ControlPlane, env: dict[str, str]) -> None:
    deployed(script("deploy", "--skip-images", env=env))

    versions = cluster_versions()
    installed = releases(env)
    assert installed["monitoring/kube-prometheus-stack"]["chart"] == \
        f"kube-prometheus-stack-{versions['KUBE_PROMETHEUS_STACK_CHART_VERSION']}"
    assert installed["k6-operator-system/k6-operator"]["chart"] == \
        f"k6-operator-{versions['K6_OPERATOR_CHART_VERSION']}"
    assert installed["elves/elves"]["status"] == "deployed"
    for namespace in ("monitoring", "k6-operator-system", NAMESPACE):
        labels = get(plane, "namespace", namespace)["metadata"]["labels"]
        assert labels.get(INSTALLED_BY) == "deployments.sh"
    # The CRDs kube-prometheus-stack brought are marked, so cleanup may delete them.
    for crd in MONITORING_CRDS:
        assert get(plane, "crd", crd)["metadata"]["labels"].get(INSTALLED_BY) == "deployments.sh"
    assert names(plane, "crd") >= {"testruns.k6.io", "loadtests.elves.dev", "systemundertests.elves.dev"}

    # kube-prometheus-stack got the remote-write receiver, native histograms, open selectors.
    stack = json.loads(get(plane, "configmap", "kube-prometheus-stack-values", "-n", "monitoring")
                       ["data"]["values.json"])["prometheus"]["prometheusSpec"]
    assert stack["enableRemoteWriteReceiver"] is True
    assert "native-histograms" in stack["enableFeatures"]
    assert stack["serviceMonitorSelectorNilUsesHelmValues"] is False
    assert stack["ruleSelectorNilUsesHelmValues"] is False
    grafana_admin = json.loads(get(plane, "configmap", "kube-prometheus-stack-values", "-n", "monitoring")
                               ["data"]["values.json"])["grafana"]["admin"]
    assert grafana_admin == {"existingSecret": "elves-grafana-admin", "userKey": "admin-user",
                             "passwordKey": "admin-password"}

    # The chart's objects, ServiceMonitors included now that their CRD exists.
    assert names(plane, "deployments", "-n", NAMESPACE) == {"gateway", "registry", "ingestor", "elves-operator"}
    assert names(plane, "statefulsets", "-n", NAMESPACE) == {"rabbitmq", "postgres"}
    monitors = get(plane, "servicemonitors", "-n", NAMESPACE)["items"]
    assert {m["metadata"]["name"] for m in monitors} == {"gateway", "registry", "ingestor", "rabbitmq"}
    assert {m["metadata"]["labels"]["release"] for m in monitors} == {"kube-prometheus-stack"}
    assert operator_env(plane)["ELVES_PROMETHEUS_URL"] == \
        "http://kube-prometheus-stack-prometheus.monitoring.svc:9090"
    secret = get(plane, "secret", "elves", "-n", NAMESPACE)["data"]
    # Grafana annotations are on: the stack's Grafana reads generated admin credentials and
    # the operator gets a copy through a Secret, never as a plain value.
    assert operator_env(plane)["ELVES_GRAFANA_URL"] == "http://kube-prometheus-stack-grafana.monitoring.svc:80"
    assert grafana_secret_refs(plane) == {"ELVES_GRAFANA_TOKEN": "elves-grafana", "ELVES_GRAFANA_USER": "elves-grafana",
                                          "ELVES_GRAFANA_PASSWORD": "elves-grafana"}
    admin = get(plane, "secret", "elves-grafana-admin", "-n", "monitoring")["data"]
    assert len(base64.b64decode(admin["admin-password"])) == 32
    assert get(plane, "secret", "elves-grafana", "-n", NAMESPACE)["data"] == {
        "user": admin["admin-user"], "password": admin["admin-password"]}

    # Idempotent: a second run upgrades in place and keeps the generated secrets.
    deployed(script("deploy", "--skip-images", env=env))
    assert releases(env)["elves/elves"]["revision"] == "2"
    assert get(plane, "secret", "elves", "-n", NAMESPACE)["data"] == secret
    assert get(plane, "secret", "elves-grafana-admin", "-n", "monitoring")["data"] == admin
    assert base64.b64decode(secret["jwt-secret"])

    removed = script("cleanup", env=env)
    assert removed.returncode == 0, removed.stderr
    assert releases(env) == {}
    assert not names(plane, "namespaces") & {NAMESPACE, "monitoring", "k6-operator-system"}
    assert not names(plane, "crd") & {"loadtests.elves.dev", "systemundertests.elves.dev", "testruns.k6.io",
                                      *MONITORING_CRDS}

    again = script("cleanup", env=env)
    assert again.returncode == 0, again.stderr
    assert "nothing of Elves is installed in context" in again.stderr


def test_skip_options_install_only_the_chart_with_the_users_values(
        plane: cp.ControlPlane, env: dict[str, str]) -> None:
    # How the end-to-end tier deploys into a cluster that has its own Prometheus and
    # k6-operator and its images loaded: no monitoring.coreos.com CRDs in this cluster.
    env = {**env, "ELVES_PROMETHEUS_URL": "http://prometheus-operated.observability.svc:9090",
           "ELVES_MONITORING_NAMESPACE": "observability", "ELVES_MONITORING_RELEASE": "e2e"}
    result = script("deploy", "--skip-monitoring", "--skip-k6-operator", "--skip-images",
                    "--values", str(cp.REPO / "charts/elves/ci/minimal-resources-values.yaml"),
                    "--set", "services.ingestor.replicas=2", env=env)
    deployed(result)
    assert "leaves its ServiceMonitors and alerts out" in result.stderr
    assert "no testruns.k6.io CRD" in result.stderr
    assert set(releases(env)) == {"elves/elves"}
    assert not names(plane, "namespaces") & {"monitoring", "observability", "k6-operator-system"}
    assert operator_env(plane)["ELVES_PROMETHEUS_URL"] == "http://prometheus-operated.observability.svc:9090"
    assert not operator_env(plane)["ELVES_GRAFANA_URL"] and grafana_secret_refs(plane) == {}  # "" is stored as no value
    assert get(plane, "deployment", "ingestor", "-n", NAMESPACE)["spec"]["replicas"] == 2
    # minimal-resources: no storage provisioner, so no volume claims.
    assert "volumeClaimTemplates" not in get(plane, "statefulset", "rabbitmq", "-n", NAMESPACE)["spec"]
    policy = get(plane, "networkpolicy", "registry", "-n", NAMESPACE)
    assert "observability" in json.dumps(policy["spec"])

    removed = script("cleanup", "--skip-monitoring", "--skip-k6-operator", env=env)
    assert removed.returncode == 0, removed.stderr
    assert NAMESPACE not in names(plane, "namespaces")
    assert "loadtests.elves.dev" not in names(plane, "crd")


def test_harness_only_installs_the_operator_without_elves_system_and_cleanup_removes_it(
        plane: cp.ControlPlane, env: dict[str, str]) -> None:
    # ./deployments.sh --harness-only: the harness for other teams' systems.
    # ELVES_IMAGE_TAG too: its operator image tag was once written after networkPolicy's line.
    result = script("deploy", "--harness-only", "--skip-monitoring", "--skip-k6-operator", "--skip-images",
                    env={**env, "ELVES_IMAGE_TAG": "harness-1"})
    deployed(result)
    operator = get(plane, "deployment", "elves-operator", "-n", NAMESPACE)
    assert operator["spec"]["template"]["spec"]["containers"][0]["image"].endswith("elves-operator:harness-1")
    assert "The Elves harness alone is installed" in result.stdout
    assert names(plane, "deployments", "-n", NAMESPACE) == {"elves-operator"}
    assert names(plane, "statefulsets", "-n", NAMESPACE) == set()
    assert names(plane, "services", "-n", NAMESPACE) == set()
    assert names(plane, "systemundertests", "-n", NAMESPACE) == set()  # no built-in target
    assert set(get(plane, "secret", "elves", "-n", NAMESPACE)["data"]) == {"jwt-secret"}  # the seal key alone
    assert operator_env(plane)["ELVES_SYSTEM_ENABLED"] == "false"
    assert names(plane, "crd") >= {"loadtests.elves.dev", "systemundertests.elves.dev"}

    removed = script("cleanup", "--skip-monitoring", "--skip-k6-operator", env=env)
    assert removed.returncode == 0, removed.stderr
    assert releases(env) == {}
    assert NAMESPACE not in names(plane, "namespaces")
    assert not names(plane, "crd") & {"loadtests.elves.dev", "systemundertests.elves.dev"}


def test_cleanup_waits_for_loadtest_finalizers_and_force_drops_them(
        plane: cp.ControlPlane, env: dict[str, str]) -> None:
    deployed(script("deploy", "--skip-monitoring", "--skip-k6-operator", "--skip-images", env=env))
    # A finalizer as the operator sets one, with no operator running to let it go.
    loadtest = yaml.safe_load((cp.REPO / "loadtests/examples/quickstart.yaml").read_text())
    loadtest["metadata"]["finalizers"] = ["elves.dev/restore"]
    plane.kubectl("apply", "-n", NAMESPACE, "-f", "-", stdin=json.dumps(loadtest))

    held = script("cleanup", "--skip-monitoring", "--skip-k6-operator", env={**env, "ELVES_TIMEOUT": "3s"})
    assert held.returncode == 1
    assert "LoadTests still held by their finalizer after 3s: elves/quickstart" in held.stderr
    assert "--force" in held.stderr
    # Nothing past the LoadTests was touched: the operator could still restore them.
    assert "elves/elves" in releases(env)
    assert get(plane, "loadtest", "quickstart", "-n", NAMESPACE)["metadata"]["deletionTimestamp"]

    forced = script("cleanup", "--force", "--skip-monitoring", "--skip-k6-operator", env=env)
    assert forced.returncode == 0, forced.stderr
    assert "removing the finalizers of LoadTest elves/quickstart" in forced.stderr
    assert NAMESPACE not in names(plane, "namespaces")
    assert "loadtests.elves.dev" not in names(plane, "crd")


def test_releases_the_scripts_did_not_install_are_left_alone(
        plane: cp.ControlPlane, env: dict[str, str], chart_repo: str) -> None:
    # The cluster's own k6-operator, installed by someone else.
    theirs = helm(env, "install", "k6-operator", "k6-operator", "--repo", chart_repo,
                  "--namespace", "k6-operator-system", "--create-namespace", "--set", "namespace.create=false")
    assert theirs.returncode == 0, theirs.stderr

    deploy = script("deploy", "--skip-monitoring", "--skip-images", env=env)
    deployed(deploy)
    assert "release k6-operator-system/k6-operator exists and was not installed by this script" in deploy.stderr
    assert releases(env)["k6-operator-system/k6-operator"]["revision"] == "1"

    removed = script("cleanup", "--skip-monitoring", env=env)
    assert removed.returncode == 0, removed.stderr
    assert "was not installed by deployments.sh: left as it is" in removed.stderr
    assert set(releases(env)) == {"k6-operator-system/k6-operator"}
    assert "k6-operator-system" in names(plane, "namespaces")
    assert "testruns.k6.io" in names(plane, "crd")


def test_deploy_without_a_container_engine_stops_before_installing(
        plane: cp.ControlPlane, env: dict[str, str]) -> None:
    result = script("deploy", "--skip-monitoring", "--skip-k6-operator",
                    env={**env, "ELVES_IMAGE_BUILDER": "no-such-engine"})
    assert result.returncode == 1
    assert "no container engine answers (tried: no-such-engine)" in result.stderr
    assert "--skip-images" in result.stderr
    assert releases(env) == {}
    assert NAMESPACE not in names(plane, "namespaces")


def test_an_unreachable_chart_repository_is_named_with_the_way_around_it(
        plane: cp.ControlPlane, env: dict[str, str]) -> None:
    # As on a machine that reaches no chart repository (this one): port 1 refuses at once.
    result = script("deploy", "--skip-k6-operator", "--skip-images",
                    env={**env, "ELVES_MONITORING_CHART_REPO": "http://127.0.0.1:1"})
    assert result.returncode == 1
    version = cluster_versions()["KUBE_PROMETHEUS_STACK_CHART_VERSION"]
    assert (f"could not install kube-prometheus-stack {version} from http://127.0.0.1:1 (see above); "
            "if the cluster has it already, pass --skip-monitoring") in result.stderr
    assert "elves/elves" not in releases(env)
