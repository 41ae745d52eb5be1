"""The cluster itself works: a real image runs as a Ready Deployment, and a pod finds it
by its Service name through CoreDNS and talks to it through kube-proxy's rules."""

from __future__ import annotations

import json
import uuid

import pytest

from kube import Cluster, cluster_sh

NAMESPACE = "e2e-smoke"


@pytest.fixture(scope="module")
def rabbitmq(cluster: Cluster) -> str:
    """A one-replica RabbitMQ Deployment and its Service; returns the Service's cluster IP."""
    cluster.load_images("rabbitmq", "k6-starter")
    cluster.kubectl("create", "namespace", NAMESPACE)
    cluster.apply(f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: rabbitmq}}
spec:
  selector: {{matchLabels: {{app: rabbitmq}}}}
  template:
    metadata: {{labels: {{app: rabbitmq}}}}
    spec:
      containers:
        - name: rabbitmq
          image: {cluster.image("rabbitmq")}
          imagePullPolicy: Never
          env:
            - {{name: RABBITMQ_DEFAULT_USER, value: elves}}
            - {{name: RABBITMQ_DEFAULT_PASS, value: smoke-test}}
          ports: [{{containerPort: 5672}}]
          readinessProbe:
            tcpSocket: {{port: 5672}}
            periodSeconds: 2
          resources:
            requests: {{cpu: 100m, memory: 256Mi}}
            limits: {{memory: 512Mi}}
---
apiVersion: v1
kind: Service
metadata: {{name: rabbitmq}}
spec:
  selector: {{app: rabbitmq}}
  ports: [{{name: amqp, port: 5672}}]
""", namespace=NAMESPACE)
    yield cluster.kubectl("get", "service", "rabbitmq", "-n", NAMESPACE, "-o", "jsonpath={.spec.clusterIP}")
    cluster.kubectl("delete", "namespace", NAMESPACE, "--wait=false")


def run_probe_pod(cluster: Cluster, script: str) -> tuple[str, str]:
    """Runs `bash -c script` in a pod of the Debian tools image; returns (phase, logs)."""
    name = f"probe-{uuid.uuid4().hex[:8]}"
    cluster.apply(f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  restartPolicy: Never
  containers:
    - name: probe
      image: {cluster.image("k6-starter")}
      imagePullPolicy: Never
      command: {json.dumps(["bash", "-c", script])}
""", namespace=NAMESPACE)
    phase = cluster.wait_pod_phase(NAMESPACE, name, {"Succeeded", "Failed"}, timeout=120)
    return phase, cluster.kubectl("logs", name, "-n", NAMESPACE)


def test_rabbitmq_deployment_becomes_ready(cluster: Cluster, rabbitmq: str) -> None:
    cluster.kubectl("rollout", "status", "deployment/rabbitmq", "-n", NAMESPACE, "--timeout=180s", timeout=200)
    deployment = cluster.kubectl_json("get", "deployment", "rabbitmq", "-n", NAMESPACE)
    assert deployment["status"].get("readyReplicas") == 1


def test_pod_resolves_service_name_and_reaches_rabbitmq(cluster: Cluster, rabbitmq: str) -> None:
    cluster.kubectl("rollout", "status", "deployment/rabbitmq", "-n", NAMESPACE, "--timeout=180s", timeout=200)
    # The short name resolves through the pod's search path to the Service's cluster IP,
    # and an AMQP handshake through that IP gets RabbitMQ's Connection.Start frame
    # (frame type 1 on channel 0), so DNS, kube-proxy and the broker all answered.
    phase, logs = run_probe_pod(cluster, r"""
        getent hosts rabbitmq | awk '{print "resolved", $1}'
        exec 3<>/dev/tcp/rabbitmq/5672
        printf 'AMQP\x00\x00\x09\x01' >&3
        head -c 3 <&3 | od -An -tx1 | tr -d ' ' | sed 's/^/frame /'
    """)
    assert phase == "Succeeded", logs
    assert f"resolved {rabbitmq}" in logs
    assert "frame 010000" in logs


def test_names_outside_the_cluster_do_not_resolve(cluster: Cluster, rabbitmq: str) -> None:
    # CoreDNS has no forwarder: nothing is ever asked of a server off this machine.
    phase, logs = run_probe_pod(cluster, "getent hosts deb.debian.org && echo LEAKED || echo 'no answer'")
    assert phase == "Succeeded", logs
    assert "no answer" in logs and "LEAKED" not in logs


def test_pods_cannot_reach_beyond_this_machine(cluster: Cluster, rabbitmq: str) -> None:
    # Asked of the kernel's routing, with pods running: nothing is sent off the machine.
    out = cluster_sh("confinement", timeout=30)
    assert out.startswith("confined"), out
    assert open("/proc/sys/net/ipv4/ip_forward").read().strip() == "0"
