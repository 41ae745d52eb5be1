"""What the operator's API-server tests stand on (no tests here; the name keeps it among
the operator test files).

The tier has a real kube-apiserver but no kubelet and no controllers, so:
- the system's Deployments exist as objects whose status the test makes look ready;
- the test plays k6-operator: it moves a TestRun's `status.stage` as k6-operator does and,
  where a test needs results, runs the TestRun's runner for real: the k6 archive from its
  ConfigMap, with its arguments and its runner environment, against the tests' fake
  gateway (tests/support/fake_gateway.py), writing to a real Prometheus by remote write;
- the registry's ledger and RabbitMQ's queue-depth series come from a small HTTP server
  in the test (the real ones need the Java services): the ledger counts what the fake
  gateway answered, the queues are empty. Prometheus scrapes it every second; another keeps the Grafana annotations it is sent.
- the same server plays another team's system on the cluster, in namespace DECOY_NAMESPACE:
  a `gateway` Deployment of 5 replicas none of them ready, its container OOM-killed again and
  again, a work queue of the same name 500 deep. The operator must see none of it.
- a system that is not Elves (ForeignSystemStandIn) is the orders service of
  loadtests/examples/own-system/: it answers the orders k6 posts, and its queue and its
  counter of stored orders lag behind, so a drain has something to wait for.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import re
import signal
import subprocess
import tarfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import engine_testkit
import requests
from kubernetes import client, config
from polling import wait_for
from kubernetes.client.exceptions import ApiException

from elves.constants import API_GROUP, API_VERSION, DEPLOYMENTS, GATEWAY_ENDPOINTS, PLURAL, WORK_QUEUES
from elves.k8s.kube import K6_GROUP, K6_PLURAL, K6_VERSION

from . import control_plane as cp

REPO = cp.REPO
K6_BINARY = cp.cache_dir() / "bin" / "k6"
JWT_SECRET = "0123456789abcdef" * 4  # 64 hex characters, as the chart generates
SERVICE_KEY = "service-key-of-the-kit"  # the registry stand-in answers only calls carrying it
SCRAPE_INTERVAL = "1s"
DECOY_NAMESPACE = "decoy-team"


# --------------------------------------------------------------------------- stand-ins


class SystemStandIn:
    """The registry's ledger and RabbitMQ's queue depth, on a loopback port; with the series
    of another team's system (DECOY_NAMESPACE) beside ours."""

    def __init__(self, gateway: Any):
        self.gateway = gateway  # the fake gateway's state: what it answered, per test id
        self.namespaces: set[str] = set()  # the systems' namespaces whose (empty) queues it serves
        self.scrapes = 0
        self.ledger_asked: list[str] = []  # the test ids the registry's ledger was asked for
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                url = urlsplit(self.path)
                if url.path == "/metrics":
                    body, kind = stand_in.metrics().encode(), "text/plain; version=0.0.4"
                elif url.path == "/api/v1/ledger" and self.headers.get("X-Elves-Service-Key") != SERVICE_KEY:
                    self.send_error(401, "the registry's API needs the service key")
                    return
                elif url.path == "/api/v1/ledger":
                    test_id = parse_qs(url.query)["testId"][0]
                    stand_in.ledger_asked.append(test_id)
                    body, kind = json.dumps(stand_in.ledger(test_id)).encode(), "application/json"
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, name="system-stand-in", daemon=True).start()

    def metrics(self) -> str:
        """As the cluster's Prometheus labels them: `namespace` = where the broker (or the
        object kube-state-metrics describes) lives."""
        self.scrapes += 1
        lines = ["# TYPE rabbitmq_detailed_queue_messages_ready gauge",
                 "# TYPE rabbitmq_detailed_queue_messages_unacked gauge"]
        for namespace in sorted(self.namespaces):
            for queue in WORK_QUEUES:
                lines.append(f'rabbitmq_detailed_queue_messages_ready{{namespace="{namespace}",vhost="/",queue="{queue}"}} 0')
                lines.append(f'rabbitmq_detailed_queue_messages_unacked{{namespace="{namespace}",vhost="/",queue="{queue}"}} 0')
        decoy = f'namespace="{DECOY_NAMESPACE}"'
        pod = f'{decoy},pod="gateway-6b7c-decoy",container="gateway"'
        lines += [
            f'rabbitmq_detailed_queue_messages_ready{{{decoy},vhost="/",queue="{WORK_QUEUES[0]}"}} 500',
            "# TYPE kube_deployment_spec_replicas gauge",
            f'kube_deployment_spec_replicas{{{decoy},deployment="gateway"}} 5',
            "# TYPE kube_deployment_status_replicas_ready gauge",
            f'kube_deployment_status_replicas_ready{{{decoy},deployment="gateway"}} 0',
            "# TYPE kube_pod_container_status_restarts_total counter",
            f"kube_pod_container_status_restarts_total{{{pod}}} {self.scrapes // 2}",  # crash-looping
            "# TYPE kube_pod_container_status_last_terminated_reason gauge",
            f'kube_pod_container_status_last_terminated_reason{{{pod},reason="OOMKilled"}} 1',
        ]
        return "\n".join(lines) + "\n"

    def ledger(self, test_id: str) -> dict[str, Any]:
        """What the registry would have persisted: a result per accepted getData, a log per
        2xx answer of a gateway endpoint (the fake finishes every plot)."""
        with self.gateway.lock:
            counts = dict(self.gateway.counts)
        accepted: dict[str, int] = {}
        for key, n in counts.items():
            endpoint, status, tid = key.split(" ", 2)
            if tid == test_id and 200 <= int(status) < 300:
                accepted[endpoint] = accepted.get(endpoint, 0) + n
        logs = {e: n for e, n in accepted.items() if e in GATEWAY_ENDPOINTS}
        requests_ = accepted.get("getData", 0)
        return {"testId": test_id, "requests": requests_, "results": {"done": requests_, "failed": 0},
                "logs": sum(logs.values()), "logsByEndpoint": logs, "duplicates": 0}

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class ForeignSystemStandIn:
    """Another team's event-driven system, the orders service of loadtests/examples/own-system/:
    POST /orders answers 202 and counts the order under its X-Test-Id; a worker "stores" each
    order SAVE_LAG seconds after it was accepted. Its /metrics, as the cluster's Prometheus would
    label them: the queue's depth (the orders not yet stored) in each namespace of `namespaces`,
    by the test ids that start with it, and orders_saved_total{test_id} of the stored ones; the
    same queue name 500 deep in DECOY_NAMESPACE, which no drain of ours may wait on."""

    QUEUE = "orders.in"
    SAVE_LAG = 2.0  # seconds from 202 to stored

    def __init__(self) -> None:
        self.namespaces: set[str] = set()
        self.lock = threading.Lock()
        self.accepted: dict[str, list[float]] = {}  # test id -> when each order was accepted
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # k6 keeps its connections

            def log_message(self, *args: object) -> None:
                pass

            def _send(self, status: int, body: bytes, kind: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if urlsplit(self.path).path != "/orders":
                    self._send(404, b'{"error":"no such path"}', "application/json")
                    return
                with stand_in.lock:
                    stand_in.accepted.setdefault(self.headers.get("X-Test-Id", ""), []).append(time.monotonic())
                self._send(202, b'{"status":"accepted"}', "application/json")

            def do_GET(self) -> None:  # noqa: N802
                if urlsplit(self.path).path != "/metrics":
                    self._send(404, b"", "text/plain")
                    return
                self._send(200, stand_in.metrics().encode(), "text/plain; version=0.0.4")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, name="foreign-system-stand-in", daemon=True).start()

    def orders(self, test_id: str) -> int:
        """How many orders of `test_id` it answered 202."""
        with self.lock:
            return len(self.accepted.get(test_id, []))

    def metrics(self) -> str:
        stored_before = time.monotonic() - self.SAVE_LAG
        with self.lock:
            stored = {t: sum(1 for at in times if at <= stored_before) for t, times in self.accepted.items()}
            waiting = {t: len(times) - stored[t] for t, times in self.accepted.items()}

        def queue(namespace: str) -> str:
            return f'{{namespace="{namespace}",vhost="/",queue="{self.QUEUE}"}}'

        lines = ["# TYPE rabbitmq_detailed_queue_messages_ready gauge",
                 "# TYPE rabbitmq_detailed_queue_messages_unacked gauge"]
        for namespace in sorted(self.namespaces):
            depth = sum(n for t, n in waiting.items() if t.startswith(f"{namespace}/"))
            lines.append(f"rabbitmq_detailed_queue_messages_ready{queue(namespace)} {depth}")
            lines.append(f"rabbitmq_detailed_queue_messages_unacked{queue(namespace)} 0")
        lines.append(f"rabbitmq_detailed_queue_messages_ready{queue(DECOY_NAMESPACE)} 500")
        lines.append("# TYPE orders_saved_total counter")
        lines += [f'orders_saved_total{{test_id="{t}"}} {n}' for t, n in sorted(stored.items()) if t]
        return "\n".join(lines) + "\n"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class AnnotationSink:
    """Grafana's annotation API as far as the operator uses it: it keeps what it is sent."""

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path != "/api/annotations":
                    self.send_error(404)
                    return
                sink.received.append(json.loads(body))
                answer = b'{"message":"Annotation added"}'
                self.send_response(200)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, name="grafana-sink", daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def start_prometheus(workdir: Path, *scrape_targets: str) -> Any:
    """Debian's Prometheus (engine_testkit's, remote-write receiver and native histograms on),
    reloaded with a job scraping the stand-ins, as the chart's ServiceMonitors would."""
    server = engine_testkit.PrometheusServer(workdir)
    (workdir / "prometheus.yml").write_text(json.dumps({
        "global": {"scrape_interval": SCRAPE_INTERVAL},
        "scrape_configs": [{"job_name": "rabbitmq-queues", "honor_labels": True,
                            "static_configs": [{"targets": [t.removeprefix("http://") for t in scrape_targets]}]}],
    }))
    server.process.send_signal(signal.SIGHUP)  # Prometheus re-reads its configuration
    query = f"{server.url}/api/v1/query"
    wait_for(lambda: requests.get(query, params={"query": "rabbitmq_detailed_queue_messages_ready"}, timeout=5)
             .json()["data"]["result"], "Prometheus to scrape the stand-in's queue depth")
    return server


# --------------------------------------------------------------------------- the cluster


def or_none(read: Callable[..., Any], *args: Any) -> Any:
    """What `read` returns, or None for a 404."""
    try:
        return read(*args)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


class Cluster:
    """The session's kube-apiserver through the kubernetes client, as the test uses it."""

    def __init__(self, kubeconfig: Path):
        self.api = config.new_client_from_config(config_file=str(kubeconfig))
        self.core = client.CoreV1Api(self.api)
        self.apps = client.AppsV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)
        self.coordination = client.CoordinationV1Api(self.api)

    def plain(self, obj: Any) -> Any:
        return obj if isinstance(obj, dict) or obj is None else self.api.sanitize_for_serialization(obj)

    def namespace(self, name: str) -> str:
        try:
            self.core.create_namespace({"metadata": {"name": name}})
            # No controller-manager here makes the default ServiceAccount pods need.
            self.core.create_namespaced_service_account(name, {"metadata": {"name": "default"}})
        except ApiException as exc:
            if exc.status != 409:
                raise
        return name

    # --- the system under test ---

    def system(self, namespace: str) -> str:
        """The chart's three Deployments (ready) and its Secret, as objects."""
        self.namespace(namespace)
        self.core.create_namespaced_secret(namespace, {
            "metadata": {"name": "elves"}, "type": "Opaque",
            "data": {"jwt-secret": base64.b64encode(JWT_SECRET.encode()).decode(),
                     "service-key": base64.b64encode(SERVICE_KEY.encode()).decode()}})
        for name in DEPLOYMENTS:
            labels = {"app.kubernetes.io/component": name}
            self.apps.create_namespaced_deployment(namespace, {
                "metadata": {"name": name, "labels": labels},
                "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{
                        "name": name, "image": f"elves-{name}:test",
                        "env": [{"name": "SERVER_PORT", "value": "8080"},
                                {"name": "ELVES_INGESTOR_GATES", "value": "600"}],
                        "resources": {"requests": {"memory": "256Mi"}, "limits": {"memory": "512Mi"}}}]}}}})
            self.make_ready(namespace, name)
        return namespace

    def deployment(self, namespace: str, name: str) -> dict[str, Any]:
        return self.plain(self.apps.read_namespaced_deployment(name, namespace))

    def make_ready(self, namespace: str, name: str) -> None:
        """What the deployment controller and the kubelet would report once the pods run."""
        deployment = self.deployment(namespace, name)
        replicas = deployment["spec"]["replicas"]
        self.apps.patch_namespaced_deployment_status(name, namespace, {"status": {
            "observedGeneration": deployment["metadata"]["generation"], "replicas": replicas,
            "updatedReplicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas}})

    def pod(self, namespace: str, name: str, labels: dict[str, str], phase: str) -> None:
        """A pod as the kubelet would report it (none runs here, and the pod has no node, so
        the API server refuses an exec into it)."""
        container = name.split("-")[0]
        self.core.create_namespaced_pod(namespace, {"metadata": {"name": name, "labels": labels}, "spec": {
            "containers": [{"name": container, "image": "elves:test"}]}})
        statuses = [{"name": container, "image": "elves:test", "imageID": "", "ready": True, "restartCount": 0,
                     "containerID": f"containerd://{name}", "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]
        self.core.patch_namespaced_pod_status(name, namespace, {"status": {
            "phase": phase, **({"containerStatuses": statuses} if phase == "Running" else {})}})

    def pod_names(self, namespace: str) -> list[str]:
        return sorted(p.metadata.name for p in self.core.list_namespaced_pod(namespace).items)

    def lock_holder(self, namespace: str) -> str:
        lease = self.plain(or_none(self.coordination.read_namespaced_lease, "elves-loadtest-lock", namespace))
        return ((lease or {}).get("spec") or {}).get("holderIdentity") or ""

    # --- LoadTests ---

    def create_loadtest(self, namespace: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        return self.custom.create_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL, {
            "apiVersion": f"{API_GROUP}/{API_VERSION}", "kind": "LoadTest",
            "metadata": {"name": name}, "spec": spec})

    def loadtest(self, namespace: str, name: str) -> dict[str, Any] | None:
        return or_none(self.custom.get_namespaced_custom_object, API_GROUP, API_VERSION, namespace, PLURAL, name)

    def status(self, namespace: str, name: str) -> dict[str, Any]:
        return (self.loadtest(namespace, name) or {}).get("status") or {}

    def delete_loadtest(self, namespace: str, name: str) -> None:
        self.custom.delete_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL, name)

    def events(self, namespace: str, name: str) -> list[dict[str, Any]]:
        listed = self.plain(self.core.list_namespaced_event(
            namespace, field_selector=f"involvedObject.name={name}"))
        return listed.get("items") or []

    # --- k6-operator's objects ---

    def testrun(self, namespace: str, name: str) -> dict[str, Any] | None:
        return or_none(self.custom.get_namespaced_custom_object, K6_GROUP, K6_VERSION, namespace, K6_PLURAL, name)

    def set_stage(self, namespace: str, name: str, stage: str) -> None:
        """What k6-operator's controller writes as the runners go along."""
        self.custom.patch_namespaced_custom_object_status(
            K6_GROUP, K6_VERSION, namespace, K6_PLURAL, name, {"status": {"stage": stage}},
            _content_type="application/merge-patch+json")

    def walk_stages(self, namespace: str, name: str, *stages: str) -> None:
        for stage in stages:
            self.set_stage(namespace, name, stage)

    def configmap(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.plain(or_none(self.core.read_namespaced_config_map, name, namespace))

    def secret(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.plain(or_none(self.core.read_namespaced_secret, name, namespace))


def runner_command(testrun: dict[str, Any], archive: bytes, workdir: Path, secret: dict[str, Any],
                   instance: int = 0, env_from: dict[str, dict[str, Any]] | None = None,
                   ) -> tuple[list[str], dict[str, str]]:
    """Runner `instance` of a TestRun as k6-operator's Job would start it (without --paused:
    nobody needs to release it; with the execution segment of its share of the
    parallelism), here instead of in a pod: (argv, environment). `secret` is the run's
    Secret, whose keys the kubelet would resolve for the secretKeyRef variables; `env_from`
    the Secrets by name that the runner's envFrom takes every key of."""
    workdir.mkdir(parents=True, exist_ok=True)
    script = workdir / testrun["spec"]["script"]["configMap"]["file"]
    script.write_bytes(archive)
    env = {key: base64.b64decode(value).decode()
           for ref in testrun["spec"]["runner"].get("envFrom", [])
           for key, value in (env_from or {})[ref["secretRef"]["name"]]["data"].items()}
    env.update({e["name"]: e["value"] if "value" in e
                else base64.b64decode(secret["data"][e["valueFrom"]["secretKeyRef"]["key"]]).decode()
                for e in testrun["spec"]["runner"]["env"]})
    env.update(PATH=os.environ.get("PATH", "/usr/bin:/bin"), HOME=str(workdir))
    parallelism = testrun["spec"]["parallelism"]
    segments = ["0", *(f"{i}/{parallelism}" for i in range(1, parallelism)), "1"]
    argv = [str(K6_BINARY), "run", "--quiet", *testrun["spec"]["arguments"].split(" "), str(script),
            f"--address=127.0.0.1:{engine_testkit.free_port()}", "--tag", f"instance_id={instance}"]
    if parallelism > 1:
        argv += [f"--execution-segment={segments[instance]}:{segments[instance + 1]}",
                 f"--execution-segment-sequence={','.join(segments)}"]
    return argv, env


def run_runner(testrun: dict[str, Any], archive: bytes, workdir: Path, secret: dict[str, Any], timeout: float = 120.0,
               env_from: dict[str, dict[str, Any]] | None = None) -> subprocess.CompletedProcess:
    """Runner 0 of a TestRun, run to its end (`env_from`: as runner_command takes it)."""
    argv, env = runner_command(testrun, archive, workdir, secret, env_from=env_from)
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout, cwd=workdir)


def run_runners(testrun: dict[str, Any], archive: bytes, workdir: Path, secret: dict[str, Any],
                timeout: float = 120.0) -> list[subprocess.CompletedProcess]:
    """Every runner of a TestRun at once, as k6-operator's starter releases them together."""
    started = []
    for instance in range(testrun["spec"]["parallelism"]):
        argv, env = runner_command(testrun, archive, workdir / f"runner-{instance}", secret, instance)
        started.append((argv, subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                               text=True, cwd=workdir / f"runner-{instance}")))
    finished = []
    for argv, process in started:
        stdout, stderr = process.communicate(timeout=timeout)
        finished.append(subprocess.CompletedProcess(argv, process.returncode, stdout, stderr))
    return finished


def archive_members(archive: bytes) -> dict[str, bytes]:
    import io

    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


# --------------------------------------------------------------------------- the operator


@contextmanager
def operator(monkeypatch: Any, caplog: Any, namespace: str | tuple[str, ...] | None,
             env: dict[str, str]) -> Iterator[Any]:
    """The operator under kopf's KopfRunner, serving one namespace or several (None: all, as the
    chart runs it by default), with these settings. kopf logs a handler that raised and carries
    on: any ERROR it logged fails the test."""
    from kopf.testing import KopfRunner

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    namespaces = (namespace,) if isinstance(namespace, str) else namespace or ()
    serves = [arg for ns in namespaces for arg in ("--namespace", ns)] or ["--all-namespaces"]
    args = ["run", "--standalone", *serves, "--module", "elves.k8s.handlers"]
    with KopfRunner(args, timeout=60) as runner:
        yield runner
    errors = [f"{r.name}: {r.getMessage()}" for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, "the operator logged errors:\n" + "\n".join(errors)


def kubectl_get_loadtests(plane: cp.ControlPlane, namespace: str) -> list[dict[str, str]]:
    """`kubectl get lt` as one dict per row, keyed by the column headers."""
    lines = plane.kubectl("get", "lt", "-n", namespace).stdout.splitlines()
    header = re.split(r"\s{2,}", lines[0].strip())
    return [dict(zip(header, re.split(r"\s{2,}", line.strip()))) for line in lines[1:]]
