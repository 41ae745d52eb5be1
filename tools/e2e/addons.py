"""Monitoring and k6-operator for the end-to-end cluster: what `deployments.sh` expects a
cluster to have when it is told --skip-monitoring --skip-k6-operator; and, when asked, KEDA
and metrics-server (what `deployments.sh --with-keda --with-metrics-server` installs).

    .venv/bin/python tools/e2e/addons.py apply [--autoscaling]    # install and wait until ready
    .venv/bin/python tools/e2e/addons.py render [--autoscaling]   # print the manifests (no CRDs)

Installs, with the images of tools/e2e/build-images.sh (nothing is pulled):
- the prometheus-operator and k6-operator CRDs (tools/fetch-crds.sh);
- prometheus-operator v0.85.0 with its upstream RBAC (example/rbac of its Go module);
- a Prometheus (3.5, built from its Go module) selecting every ServiceMonitor and PrometheusRule in every
  namespace, with the remote-write receiver and native histograms on, behind the Service
  prometheus.monitoring.svc:9090 (PROMETHEUS_URL below);
- kube-state-metrics v2.15.0, scraped through a ServiceMonitor;
- k6-operator v0.0.19 from the bundle.yaml of its Go module, without its kube-rbac-proxy
  sidecar (an image this machine cannot have; metrics stay on loopback in the pod);
- with --autoscaling (the opt-in autoscaling tests, `make test-autoscaling`): KEDA v2.21.0's
  operator and metrics API server from the config/ of its Go module (no admission webhooks),
  in namespace keda (the chart's networkPolicy.keda.namespace, let through to RabbitMQ), and
  metrics-server v0.8.0 from manifests/base of its Go module, on the host network (see
  metrics_server()); both serve aggregated APIs through cluster.sh's front proxy.
Upstream manifests come from the Go modules (the module proxy is where these projects
are reachable from here); what is ours is written out below.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from elves.cache import cache_root

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CACHE = cache_root()

MONITORING_NAMESPACE = "monitoring"
K6_OPERATOR_NAMESPACE = "k6-operator-system"
KEDA_NAMESPACE = "keda"
METRICS_SERVER_NAMESPACE = "kube-system"
# The aggregated APIs the autoscaling add-ons serve (APIService names).
AUTOSCALING_APIS = ("v1beta1.external.metrics.k8s.io", "v1beta1.metrics.k8s.io")
# metrics-server's HTTPS port on the node's sink address (it runs on the host network).
METRICS_SERVER_PORT = 16444
# CPU requests of the autoscaling add-ons: small, so that they leave the 2 cores' requests to
# the replicas KEDA adds (upstream asks 100m each).
ADDON_CPU_REQUEST = "20m"
PROMETHEUS_NAME = "prometheus"
PROMETHEUS_URL = f"http://{PROMETHEUS_NAME}.{MONITORING_NAMESPACE}.svc:9090"
TIMEOUT_S = 300

RESTRICTED_CONTAINER = {
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
}


def versions() -> dict[str, str]:
    """The pins of tools/versions.env and tools/e2e/versions.env, as bash sees them."""
    out = subprocess.run(
        ["bash", "-c", f"set -a && source {HERE / 'versions.env'} && env"], capture_output=True, text=True, check=True
    ).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def image(name: str) -> str:
    out = subprocess.run([str(HERE / "build-images.sh"), "--list", name], capture_output=True, text=True, check=True)
    return out.stdout.split()[1]


def module_dir(module: str, version: str) -> Path:
    """The source of a Go module in the module cache (downloaded when missing)."""
    out = subprocess.run(
        ["go", "mod", "download", "-json", f"{module}@{version}"],
        capture_output=True, text=True, cwd="/", env={**os.environ, "GOFLAGS": ""},
    )
    info = json.loads(out.stdout or "{}")
    if out.returncode != 0 or "Dir" not in info:
        sys.exit(f"addons: cannot download Go module {module}@{version}: {info.get('Error') or out.stderr}")
    return Path(info["Dir"])


class _PlainDumper(yaml.SafeDumper):
    """Writes a dict used twice as two copies, not as a YAML anchor and alias."""

    def ignore_aliases(self, data: object) -> bool:
        return True


def dump(docs: list[dict]) -> str:
    return yaml.dump_all(docs, Dumper=_PlainDumper, sort_keys=False)


def load_all(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


# --- prometheus-operator, Prometheus, kube-state-metrics ----------------------------------

def prometheus_operator(version: str) -> list[dict]:
    rbac = module_dir("github.com/prometheus-operator/prometheus-operator", version) / "example/rbac"
    docs = []
    for name in ("service-account", "cluster-role", "cluster-role-binding", "deployment"):
        docs += load_all(rbac / "prometheus-operator" / f"prometheus-operator-{name}.yaml")
    for doc in docs:
        retarget_namespace(doc, "default", MONITORING_NAMESPACE)
        if doc["kind"] == "Deployment":
            container = doc["spec"]["template"]["spec"]["containers"][0]
            container["image"] = image("prometheus-operator")
            # No kubelet Service to maintain; the config reloader is ours.
            container["args"] = [f"--prometheus-config-reloader={image('prometheus-config-reloader')}"]
            container["imagePullPolicy"] = "Never"
    return docs


def prometheus(version: str) -> list[dict]:
    rbac = module_dir("github.com/prometheus-operator/prometheus-operator", version) / "example/rbac/prometheus"
    docs = []
    for name in ("service-account", "cluster-role", "cluster-role-binding"):
        docs += load_all(rbac / f"prometheus-{name}.yaml")
    for doc in docs:
        if doc["kind"] == "ServiceAccount":
            doc["metadata"]["namespace"] = MONITORING_NAMESPACE
        retarget_namespace(doc, "default", MONITORING_NAMESPACE)
    docs.append({
        "apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
        "metadata": {"name": PROMETHEUS_NAME, "namespace": MONITORING_NAMESPACE},
        "spec": {
            "image": f"docker.io/{image('prometheus')}",
            # The flags prometheus-operator generates depend on the version it is told.
            "version": image("prometheus").rsplit(":", 1)[1],
            "replicas": 1,
            "serviceAccountName": "prometheus",
            # Empty selectors: every ServiceMonitor, PodMonitor and rule, in every namespace.
            **{f"{kind}{scope}": {} for kind in ("serviceMonitor", "podMonitor", "rule")
               for scope in ("Selector", "NamespaceSelector")},
            "scrapeInterval": "5s", "evaluationInterval": "15s",
            "enableRemoteWriteReceiver": True,
            "enableFeatures": ["native-histograms"],
            "retention": "1d",
            "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}},
            "securityContext": {"runAsNonRoot": True, "runAsUser": 65534, "runAsGroup": 65534, "fsGroup": 65534,
                                "seccompProfile": {"type": "RuntimeDefault"}},
        },
    })
    docs.append({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": PROMETHEUS_NAME, "namespace": MONITORING_NAMESPACE},
        "spec": {"selector": {"prometheus": PROMETHEUS_NAME},
                 "ports": [{"name": "web", "port": 9090, "targetPort": "web"}]},
    })
    return docs


def kube_state_metrics() -> list[dict]:
    labels = {"app.kubernetes.io/name": "kube-state-metrics"}
    resources = ["pods", "deployments", "statefulsets", "replicasets", "nodes", "namespaces", "services", "jobs"]
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": "kube-state-metrics", "namespace": MONITORING_NAMESPACE}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": "kube-state-metrics"},
         "rules": [
             {"apiGroups": [""], "resources": ["pods", "nodes", "namespaces", "services"], "verbs": ["list", "watch"]},
             {"apiGroups": ["apps"], "resources": ["deployments", "statefulsets", "replicasets"], "verbs": ["list", "watch"]},
             {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["list", "watch"]},
         ]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "kube-state-metrics"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "kube-state-metrics"},
         "subjects": [{"kind": "ServiceAccount", "name": "kube-state-metrics", "namespace": MONITORING_NAMESPACE}]},
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": "kube-state-metrics", "namespace": MONITORING_NAMESPACE, "labels": labels},
         "spec": {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": {
             "serviceAccountName": "kube-state-metrics",
             "securityContext": {"runAsNonRoot": True, "runAsUser": 65534, "seccompProfile": {"type": "RuntimeDefault"}},
             "containers": [{
                 "name": "kube-state-metrics", "image": image("kube-state-metrics"), "imagePullPolicy": "Never",
                 "args": ["--port=8080", "--telemetry-port=8081", f"--resources={','.join(resources)}"],
                 "ports": [{"name": "http-metrics", "containerPort": 8080}, {"name": "telemetry", "containerPort": 8081}],
                 "readinessProbe": {"httpGet": {"path": "/readyz", "port": 8081}, "periodSeconds": 2},
                 "resources": {"requests": {"cpu": "20m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
                 "securityContext": dict(RESTRICTED_CONTAINER),
             }],
         }}}},
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": "kube-state-metrics", "namespace": MONITORING_NAMESPACE, "labels": labels},
         "spec": {"selector": labels, "ports": [{"name": "http-metrics", "port": 8080, "targetPort": "http-metrics"}]}},
        {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
         "metadata": {"name": "kube-state-metrics", "namespace": MONITORING_NAMESPACE},
         "spec": {"selector": {"matchLabels": labels},
                  # Keep the namespace/pod labels of the objects, not of kube-state-metrics itself.
                  "endpoints": [{"port": "http-metrics", "interval": "5s", "honorLabels": True}]}},
    ]


# --- k6-operator ----------------------------------------------------------------------

def k6_operator(version: str) -> list[dict]:
    docs = []
    for doc in load_all(module_dir("github.com/grafana/k6-operator", version) / "bundle.yaml"):
        if doc["kind"] == "CustomResourceDefinition":
            continue  # from tools/fetch-crds.sh, applied first
        if doc["kind"] == "Service":
            continue  # the metrics Service of the dropped kube-rbac-proxy
        if doc["kind"] == "Deployment":
            spec = doc["spec"]["template"]["spec"]
            spec["containers"] = [c for c in spec["containers"] if c["name"] == "manager"]
            spec["containers"][0].update(image=image("k6-operator"), imagePullPolicy="Never")
        docs.append(doc)
    return docs


# --- KEDA and metrics-server (--autoscaling) ------------------------------------------------

def keda(version: str) -> list[dict]:
    """KEDA's operator and its external metrics API server, as its config/ kustomization lays
    them out (namespace keda), with our images and without the admission webhooks: the
    operator makes its own certificates (--enable-cert-rotation, Secret kedaorg-certs) and
    puts their CA in the APIService, but is told there is no webhook to patch."""
    config = module_dir("github.com/kedacore/keda/v2", version) / "config"
    files = ["general/namespace.yaml", "service_account/service_account.yaml", "rbac/role.yaml",
             "rbac/role_binding.yaml", "rbac/aggregate_cluster_roles.yaml", "manager/manager.yaml",
             "manager/service.yaml", *(f"metrics-server/{name}.yaml" for name in
                                       ("role", "role_binding", "deployment", "service", "api_service"))]
    docs = [doc for name in files for doc in load_all(config / name)]
    images = {"keda-operator": "keda", "keda-metrics-apiserver": "keda-metrics-apiserver"}
    for doc in docs:
        if doc["kind"] != "Deployment":
            continue
        container, = doc["spec"]["template"]["spec"]["containers"]
        container.update(image=image(images[doc["metadata"]["name"]]), imagePullPolicy="Never")
        container["resources"]["requests"]["cpu"] = ADDON_CPU_REQUEST
        if doc["metadata"]["name"] == "keda-operator":
            container["args"].append("--enable-webhook-patching=false")  # no admission webhooks here
    return docs


def metrics_server(version: str, node: str, api_server: str) -> list[dict]:
    """metrics-server as its manifests/base lays it out (kube-system, the labels its
    kustomization adds), changed in one way: it runs on the host network. The kubelet of the
    test cluster listens on loopback only (cluster.sh), which a pod's own loopback is not;
    on the host network metrics-server reaches it as the node's host name (resolved to
    127.0.0.1: hostAliases) and checks its serving certificate against the cluster CA
    (kube-root-ca.crt) instead of --kubelet-insecure-tls. It listens only on the node's
    sink address (its pod IP), where the API server's front proxy reaches it, and reaches the API
    server where the control plane does (`api_server`, https://<node address>:<port>), not
    through a Service address, which the host network would need kube-proxy's rules for."""
    base = module_dir("sigs.k8s.io/metrics-server", version) / "manifests" / "base"
    docs = [doc for name in ("rbac", "service", "deployment", "apiservice") for doc in load_all(base / f"{name}.yaml")]
    labels = {"k8s-app": "metrics-server"}  # the kustomization's commonLabels
    for doc in docs:
        doc["metadata"].setdefault("labels", {}).update(labels)
        if doc["kind"] == "Service":
            doc["spec"]["selector"] = dict(labels)
        if doc["kind"] != "Deployment":
            continue
        doc["spec"]["selector"] = {"matchLabels": dict(labels)}
        pod = doc["spec"]["template"]
        pod.setdefault("metadata", {}).setdefault("labels", {}).update(labels)
        spec = pod["spec"]
        spec.update(hostNetwork=True, hostAliases=[{"ip": "127.0.0.1", "hostnames": [node]}])
        spec["volumes"].append({"name": "cluster-ca", "configMap": {"name": "kube-root-ca.crt"}})
        container, = spec["containers"]
        container.update(image=image("metrics-server"), imagePullPolicy="Never")
        container["resources"]["requests"]["cpu"] = ADDON_CPU_REQUEST
        container["ports"] = [{"name": "https", "containerPort": METRICS_SERVER_PORT, "protocol": "TCP"}]
        host, port = api_server.removeprefix("https://").rsplit(":", 1)
        container["env"] = [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                            {"name": "KUBERNETES_SERVICE_HOST", "value": host},
                            {"name": "KUBERNETES_SERVICE_PORT", "value": port}]
        container["volumeMounts"].append({"name": "cluster-ca", "mountPath": "/etc/cluster-ca", "readOnly": True})
        container["args"] = ["--cert-dir=/tmp", f"--secure-port={METRICS_SERVER_PORT}", "--bind-address=$(POD_IP)",
                             "--kubelet-preferred-address-types=Hostname", "--kubelet-use-node-status-port",
                             "--kubelet-certificate-authority=/etc/cluster-ca/ca.crt", "--metric-resolution=15s"]
    return docs


def node_name() -> str:
    """The single node's name (its host name, which the kubelet's certificate is issued to)."""
    return kubectl("get", "nodes", "-o", "jsonpath={.items[0].metadata.name}").strip()


def api_server_url() -> str:
    """The API server as the kubeconfig in use reaches it (cluster.sh's: the node's address)."""
    return kubectl("config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}").strip()


def retarget_namespace(doc: dict, old: str, new: str) -> None:
    """Moves an upstream example from namespace `old` to `new` (objects and subjects)."""
    if doc["metadata"].get("namespace") == old:
        doc["metadata"]["namespace"] = new
    for subject in doc.get("subjects", []):
        if subject.get("namespace") == old:
            subject["namespace"] = new


def manifests(autoscaling: bool = False) -> list[dict]:
    v = versions()
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": MONITORING_NAMESPACE}}
    docs = [namespace, *prometheus_operator(v["PROMETHEUS_OPERATOR_VERSION"]), *kube_state_metrics(),
            *prometheus(v["PROMETHEUS_OPERATOR_VERSION"]), *k6_operator(v["K6_OPERATOR_VERSION"])]
    if autoscaling:
        docs += [*keda(v["KEDA_VERSION"]), *metrics_server(v["METRICS_SERVER_VERSION"], node_name(), api_server_url())]
    return docs


# --- apply ------------------------------------------------------------------------------

def kubectl(*args: str, stdin: str | None = None, timeout: float = TIMEOUT_S + 30) -> str:
    done = subprocess.run(["kubectl", *args], input=stdin, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        sys.exit(f"addons: kubectl {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
    return done.stdout


def apply(autoscaling: bool = False) -> None:
    crd_dirs = subprocess.run([str(REPO / "tools" / "fetch-crds.sh")], capture_output=True, text=True, check=True)
    for crd_dir in crd_dirs.stdout.split():
        # Server-side: the CRDs are too large for the last-applied annotation.
        kubectl("apply", "--server-side", "--force-conflicts", "-f", crd_dir)
    kubectl("wait", "--for=condition=Established", "crd", "--all", f"--timeout={TIMEOUT_S}s")
    docs = manifests(autoscaling)
    kubectl("apply", "--server-side", "--force-conflicts", "-f", "-",
            stdin=dump(docs))
    deployments = [(MONITORING_NAMESPACE, "prometheus-operator"), (MONITORING_NAMESPACE, "kube-state-metrics"),
                   (K6_OPERATOR_NAMESPACE, "k6-operator-controller-manager")]
    if autoscaling:
        deployments += [(KEDA_NAMESPACE, "keda-operator"), (KEDA_NAMESPACE, "keda-metrics-apiserver"),
                        (METRICS_SERVER_NAMESPACE, "metrics-server")]
    for namespace, deployment in deployments:
        kubectl("-n", namespace, "rollout", "status", f"deployment/{deployment}", f"--timeout={TIMEOUT_S}s")
    # The operator makes the StatefulSet; wait for it to exist, then for its pod.
    kubectl("-n", MONITORING_NAMESPACE, "wait", "--for=jsonpath={.status.availableReplicas}=1",
            f"prometheus/{PROMETHEUS_NAME}", f"--timeout={TIMEOUT_S}s")
    if autoscaling:
        # Available: the API server reaches the server behind it through the front proxy (and,
        # for KEDA's, trusts the CA the operator put in the APIService).
        for api in AUTOSCALING_APIS:
            kubectl("wait", "--for=condition=Available", f"apiservice/{api}", f"--timeout={TIMEOUT_S}s")
        print(f"addons: KEDA and metrics-server ready ({', '.join(AUTOSCALING_APIS)} served)")
    print(f"addons: monitoring and k6-operator ready; Prometheus at {PROMETHEUS_URL}")


def main() -> None:
    command, *options = sys.argv[1:] or [""]
    if set(options) - {"--autoscaling"}:
        sys.exit(__doc__)
    autoscaling = "--autoscaling" in options
    if command == "render":
        print(dump(manifests(autoscaling)))
    elif command == "apply":
        apply(autoscaling)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
