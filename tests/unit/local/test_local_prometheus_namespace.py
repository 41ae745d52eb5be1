"""The local Prometheus, configured as the local stack configures it, scraping stand-ins for
RabbitMQ, the supervisor and a service replica: the engine's system queries, asked for the
namespace the local platform reports, find every series (one set of queries for both modes); a
team's own service listed in the own-system file is scraped too (a SystemUnderTest's ledger)."""

from __future__ import annotations

import json
import re
import signal
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest
from engine_testkit import PrometheusServer
from polling import wait_for

from elves.constants import QUEUE_INGESTOR_DATA
from elves.engine.results import promql
from elves.engine.results.prometheus import Prometheus
from elves.local import kube_state
from elves.local.platform import LocalPlatform
from elves.local.ports import HOST, Ports, free_offset
from elves.local.prometheus_config import LOOPBACK_ADDRESS, OWN_SYSTEM_NAMESPACE, render_config, render_targets
from elves.local.replicas import DeploymentSpec, Replica

# What each stand-in serves, by path, as the real ones name their series (RabbitMQ's and the
# JVM's carry no namespace; the supervisor's kube-state series carry it themselves).
RABBITMQ = {
    "/metrics": "rabbitmq_global_messages_received_total 12\n",
    "/metrics/detailed": f'rabbitmq_detailed_queue_messages_ready{{vhost="/",queue="{QUEUE_INGESTOR_DATA}"}} 7\n'
                         f'rabbitmq_detailed_queue_messages_unacked{{vhost="/",queue="{QUEUE_INGESTOR_DATA}"}} 2\n',
}
REPLICA = Replica("registry", 0, 1, phase="running", ready=True, restarts=2, last_reason="Error", last_exit_code=3)
SUPERVISOR = {"/metrics": kube_state.render([DeploymentSpec("registry", 1)], [REPLICA])}
SERVICE = {"/actuator/prometheus": 'jvm_memory_used_bytes{application="registry",area="heap",id="G1 Old Gen"} 1.5e8\n'}
# A team's own service on this machine (docs/own-system.md): what its SystemUnderTest's ledger counts.
# It also claims to be Elves' system (a restart of the gateway), in the series and in the file
# that lists it: the verdict of Elves' system never sees that.
OWN_SERVICE = {"/metrics": 'orders_saved_total{test_id="shop/orders-steady/0"} 5\n'
                           'kube_pod_container_status_restarts_total{namespace="elves",pod="gateway-0",'
                           'container="gateway"} 7\n'}


def serve(port: int, pages: dict[str, str]) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            body = pages.get(urlsplit(self.path).path)
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body.encode())))
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer((HOST, port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture(scope="module")
def local_prometheus(tmp_path_factory) -> Iterator[Prometheus]:
    offset = free_offset(range(6500, 500, -500))  # ports below the ephemeral range
    assert offset is not None, "no free port offset for the stand-ins"
    ports = Ports(offset)
    servers = [serve(ports.rabbitmq_prometheus, RABBITMQ), serve(ports.supervisor, SUPERVISOR),
               serve(ports.replica_management("registry", 0), SERVICE),
               serve(ports.replica_management("ingestor", 0), OWN_SERVICE)]
    workdir = tmp_path_factory.mktemp("local-prometheus")
    prometheus = PrometheusServer(workdir)
    targets = workdir / "targets.json"
    targets.write_text(render_targets(ports, [REPLICA]))
    own_system = workdir / "own-system.json"
    own_system.write_text(json.dumps([{"targets": [f"{HOST}:{ports.replica_management('ingestor', 0)}"],
                                       "labels": {"job": "orders", "namespace": "elves"}}]))
    (workdir / "prometheus.yml").write_text(render_config(ports, targets, own_system))
    prometheus.process.send_signal(signal.SIGHUP)  # Prometheus re-reads its configuration
    yield Prometheus(prometheus.url, system_namespace=LocalPlatform.system_namespace)
    prometheus.stop()
    for server in servers:
        server.shutdown()
        server.server_close()


def test_the_engines_system_queries_find_the_local_series_in_the_platforms_namespace(local_prometheus):
    prom, namespace = local_prometheus, local_prometheus.system_namespace

    def every_job_scraped() -> bool:
        # The next scrape after the reload: 5 s (prometheus_config.SCRAPE_INTERVAL).
        return len(prom.query('up == 1')) == 5

    wait_for(every_job_scraped, "the local Prometheus to scrape the five stand-in jobs", 30, interval=0.5)
    assert prom.by_label(promql.queue_depth(namespace=namespace), "queue") == {QUEUE_INGESTOR_DATA: 9}
    assert prom.by_label(promql.restarts_total(namespace=namespace), "container") == {"registry": 2}
    assert prom.by_label(promql.replicas_ready(namespace=namespace), "deployment") == {"registry": 1}
    # A subquery sees a sample only from its next step on (steps are aligned to the clock, every
    # SUBQUERY_STEP): right after the first scrape the heap's maximum may not be there yet.
    heap = wait_for(lambda: prom.by_label(promql.jvm_heap_max("1m", namespace=namespace), "application"),
                    "a subquery step after the replica's first scrape", 30, interval=0.5)
    assert heap == {"registry": 1.5e8}
    # Another namespace sees nothing of this system.
    assert prom.by_label(promql.queue_depth(namespace="other"), "queue") == {}


def test_a_teams_own_service_is_scraped_and_only_on_this_machine(local_prometheus):
    prom = local_prometheus
    wait_for(lambda: prom.query('up{job="orders"} == 1'), "the own-system job's first scrape", 30, interval=0.5)
    assert prom.query('sum(orders_saved_total{test_id="shop/orders-steady/0"})')[0].value == 5
    # What it claimed is kept under exported_namespace, in a namespace of its own.
    forged = prom.query('kube_pod_container_status_restarts_total{container="gateway"}')
    assert [(s.labels["namespace"], s.labels["exported_namespace"]) for s in forged] == [(OWN_SYSTEM_NAMESPACE, "elves")]
    # Prometheus anchors a relabel regex at both ends: only loopback addresses are kept.
    kept = [a for a in ("127.0.0.1:9100", "localhost:9100", "[::1]:9100", "10.88.0.5:9100", "127.0.0.1.example:80",
                        "orders.shop.svc:8080") if re.fullmatch(LOOPBACK_ADDRESS, a)]
    assert kept == ["127.0.0.1:9100", "localhost:9100", "[::1]:9100"]
