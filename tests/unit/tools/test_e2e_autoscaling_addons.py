"""Tier 1: what the opt-in autoscaling tests install into the test cluster (tools/e2e/addons.py
apply --autoscaling) and build (tools/e2e/build-go-binaries.sh), read from the upstream Go
modules as the tier reads them, without a cluster.

What a user of `make test-autoscaling` would notice if these broke: KEDA's build picking other
dependency versions than KEDA's own go.mod (a replace or exclude not repeated after a version
bump), a pod waiting for an image this machine cannot pull, KEDA's operator waiting for admission
webhooks that are not installed, KEDA in a namespace the chart's NetworkPolicies keep away from
RabbitMQ, or metrics-server skipping the kubelet's certificate check or listening beyond the
node's sink address.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from prerequisites import require

REPO = Path(__file__).resolve().parents[3]
E2E = REPO / "tools" / "e2e"
NODE, API_SERVER = "node-name", "https://10.88.0.1:16443"


@pytest.fixture(scope="module")
def addons():
    require(shutil.which("go"), "go is missing (the upstream manifests come from the Go modules)")
    sys.path.insert(0, str(E2E))
    try:
        import addons as module
    finally:
        sys.path.remove(str(E2E))
    return module


def pins() -> dict[str, str]:
    out = subprocess.run(["bash", "-c", f"set -a; source {E2E / 'versions.env'}; env"], capture_output=True,
                         text=True, check=True, env={"PATH": os.environ["PATH"]}).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def of_kind(docs: list[dict], kind: str) -> dict[str, dict]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def test_keda_runs_our_images_in_the_namespace_the_chart_lets_through_without_webhooks(addons) -> None:
    docs = addons.keda(pins()["KEDA_VERSION"])
    deployments = of_kind(docs, "Deployment")
    assert set(deployments) == {"keda-operator", "keda-metrics-apiserver"}
    assert not of_kind(docs, "ValidatingWebhookConfiguration") and "keda-admission-webhooks" not in deployments
    chart_default = yaml.safe_load((REPO / "charts" / "elves" / "values.yaml").read_text())["networkPolicy"]["keda"]
    assert {d["metadata"]["namespace"] for d in deployments.values()} == {chart_default["namespace"]} == {
        addons.KEDA_NAMESPACE}
    images = {"keda-operator": "keda", "keda-metrics-apiserver": "keda-metrics-apiserver"}
    for name, deployment in deployments.items():
        container, = deployment["spec"]["template"]["spec"]["containers"]
        assert (container["image"], container["imagePullPolicy"]) == (addons.image(images[name]), "Never")
        # The command is the path the image has its program at (images/static-program/image.conf).
        assert container["command"] == [f"/{'keda' if name == 'keda-operator' else 'keda-adapter'}"]
    operator, = deployments["keda-operator"]["spec"]["template"]["spec"]["containers"]
    assert {"--enable-cert-rotation=true", "--enable-webhook-patching=false"} <= set(operator["args"])
    api, = of_kind(docs, "APIService").values()
    assert api["spec"]["service"] == {"name": "keda-metrics-apiserver", "namespace": addons.KEDA_NAMESPACE}


def test_metrics_server_checks_the_kubelets_certificate_and_listens_on_the_node_address_only(addons) -> None:
    docs = addons.metrics_server(pins()["METRICS_SERVER_VERSION"], NODE, API_SERVER)
    deployment, = of_kind(docs, "Deployment").values()
    pod = deployment["spec"]["template"]
    container, = pod["spec"]["containers"]
    args = container["args"]
    assert (container["image"], container["imagePullPolicy"]) == (addons.image("metrics-server"), "Never")
    assert pod["spec"]["hostNetwork"] is True
    # On the host network: the kubelet (loopback only) by the node's name, resolved to loopback,
    # its certificate checked against the cluster CA; the API server at the node's address.
    assert "--kubelet-insecure-tls" not in args
    assert "--kubelet-certificate-authority=/etc/cluster-ca/ca.crt" in args
    assert "--kubelet-preferred-address-types=Hostname" in args
    assert pod["spec"]["hostAliases"] == [{"ip": "127.0.0.1", "hostnames": [NODE]}]
    assert {"name": "cluster-ca", "configMap": {"name": "kube-root-ca.crt"}} in pod["spec"]["volumes"]
    env = {e["name"]: e.get("value") or e["valueFrom"]["fieldRef"]["fieldPath"] for e in container["env"]}
    assert env == {"POD_IP": "status.podIP", "KUBERNETES_SERVICE_HOST": "10.88.0.1", "KUBERNETES_SERVICE_PORT": "16443"}
    # Listens only on its pod IP (the node's sink address), on a port the host's kubelet does not hold.
    assert "--bind-address=$(POD_IP)" in args
    port, = container["ports"]
    assert f"--secure-port={port['containerPort']}" in args and port["containerPort"] != 10250
    # The labels the upstream kustomization adds tie the Service and the Deployment to the pods.
    labels = pod["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    service, = of_kind(docs, "Service").values()
    assert service["spec"]["selector"].items() <= labels.items()


def test_kedas_build_repeats_the_replace_and_exclude_of_its_go_mod(addons) -> None:
    """Only a main module's replace and exclude apply: the wrapper module must repeat KEDA's."""
    version = pins()["KEDA_VERSION"]
    gomod = (addons.module_dir("github.com/kedacore/keda/v2", version) / "go.mod").read_text()
    upstream = {f"{m}@{v}=>{r}@{rv}" for m, v, r, rv in
                re.findall(r"^replace (\S+) (v\S+) => (\S+) (v\S+)$", gomod, re.M)}
    upstream |= {f"!{m}@{v}" for m, v in re.findall(r"^exclude (\S+) (v\S+)$", gomod, re.M)}
    assert upstream and set(pins()["KEDA_GO_MOD_DIRECTIVES"].split()) == upstream


@pytest.mark.parametrize("image, program", [("keda", "keda-operator"), ("keda-metrics-apiserver", "keda-adapter"),
                                            ("metrics-server", "metrics-server"), ("prometheus", "prometheus"),
                                            ("coredns", "coredns")])
def test_each_image_holds_the_binary_its_program_is_built_to(image: str, program: str) -> None:
    """The image's recipe names the binary it copies; build-go-binaries.sh names the one it builds
    (KEDA's and Prometheus' carry what they were cut to, the shared ones their build list): the two
    must be one path, and the program the image's own."""
    env = {"PATH": os.environ["PATH"], "ELVES_CACHE": "/cache", "REPO": str(REPO)}
    recipe = subprocess.run(["bash", "-c", f"die() {{ echo \"$*\" >&2; exit 1; }}; source {E2E / 'versions.env'}; "
                             f"IMAGE_NAME={image}; source {REPO / 'images' / 'static-program' / 'image.conf'}; "
                             "echo \"$BINARY\""], capture_output=True, text=True, check=True, env=env).stdout.strip()
    built = subprocess.run([str(E2E / "build-go-binaries.sh"), "--path", program], capture_output=True, text=True,
                           check=True, env=env).stdout.strip()
    assert recipe == built and Path(built).name.startswith(f"{program}-")
