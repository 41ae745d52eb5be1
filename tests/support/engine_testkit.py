"""Real servers for the engine's tests: Debian's Prometheus (optionally backfilled) and k6.

Imported by the engine's unit tests and by the API-server tier (tests/support is on
pytest's path: pytest.ini).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

from polling import wait_for
from prerequisites import require

from elves.cache import cache_root

PROMETHEUS_BINARY = os.environ.get("ELVES_PROMETHEUS_BINARY", "/usr/bin/prometheus")
K6_BINARY = cache_root() / "bin" / "k6"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrometheusServer:
    """Debian's Prometheus on a free loopback port, with the remote-write receiver and
    native histograms as the local stack runs it; stopped by its PID."""

    def __init__(self, workdir: Path, data_dir: Path | None = None):
        require(Path(PROMETHEUS_BINARY).exists() or shutil.which("prometheus") is not None,
                "prometheus is missing (tools/install-local-deps.sh)")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = workdir / "prometheus.yml"
        config.write_text("global: {scrape_interval: 5s}\nscrape_configs: []\n")
        self.log = (workdir / "prometheus.log").open("w")
        self.process = subprocess.Popen([
            PROMETHEUS_BINARY, f"--config.file={config}", f"--storage.tsdb.path={data_dir or workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{self.port}", "--web.enable-remote-write-receiver",
            "--enable-feature=native-histograms", "--storage.tsdb.retention.time=30d",
        ], stdout=self.log, stderr=subprocess.STDOUT)
        self._wait_ready()

    def _wait_ready(self) -> None:
        import requests

        def ready() -> bool:
            if self.process.poll() is not None:
                raise RuntimeError(f"prometheus exited with {self.process.returncode}; see {self.log.name}")
            return requests.get(f"{self.url}/-/ready", timeout=1).status_code == 200

        wait_for(ready, f"prometheus to be ready (see {self.log.name})", 30, ignore=(requests.RequestException,))

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


def backfill(workdir: Path, samples: list[tuple[str, float, float]]) -> Path:
    """A TSDB data directory holding `samples` (series text, value, epoch seconds), via promtool."""
    promtool = shutil.which("promtool")
    require(promtool is not None, "promtool is missing (tools/install-local-deps.sh installs Debian's prometheus)")
    names = sorted({series.split("{")[0] for series, _, _ in samples})
    by_name = {name: [s for s in samples if s[0].split("{")[0] == name] for name in names}
    lines = []
    for name in names:
        lines.append(f"# TYPE {name} gauge")
        lines += [f"{series} {value} {at:.3f}" for series, value, at in sorted(by_name[name], key=lambda s: (s[0], s[2]))]
    lines.append("# EOF")
    source = workdir / "samples.om"
    source.write_text("\n".join(lines) + "\n")
    data = workdir / "data"
    subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", str(source), str(data)],
                   check=True, capture_output=True)
    return data


class KnownRun:
    """A run's history as Prometheus would hold it, for backfilling: a 60 s load of getData
    (2/s) and getStatus (1/s, 3 failures); the ingestor queue rises to 300 while the
    ingestor is OOM-killed once and scaled to 0 and back, then drains by the end; a new
    gateway pod shows up with a restart already counted; another test id's traffic must not
    leak into this run's numbers.

    The system's series are in namespace `elves`. Another team's system in namespace
    `other` (DECOY_NAMESPACE) has the same names: a `gateway` Deployment of 5 replicas whose
    container is OOM-killed 3 times during the run, an ingestor queue 5000 deep and JVMs with
    far more heap. None of it may reach this run's figures."""

    test_id = "local/analysis/0"
    queue = "elves.ingestor.data.in"
    namespace = "elves"
    decoy_namespace = "other"

    def __init__(self) -> None:
        import time as _time

        self.t0 = (int(_time.time()) - 3 * 3600) // 60 * 60
        self.load_start, self.load_end, self.drain_end = self.t0 + 10, self.t0 + 70, self.t0 + 100

    def history(self) -> list[tuple[str, float, float]]:
        samples = []
        k6 = 'k6_http_reqs_total{{testid="{tid}",endpoint="{ep}",status="{st}",expected_response="{ok}"}}'
        for offset in range(0, 121, 5):
            t = self.t0 + offset
            if 15 <= offset <= 75:  # k6 pushes from its first flush until it stops
                elapsed = min(offset, 70) - 10
                samples.append((k6.format(tid=self.test_id, ep="getData", st="202", ok="true"), 2 * elapsed, t))
                samples.append((k6.format(tid=self.test_id, ep="getStatus", st="200", ok="true"), elapsed, t))
                samples.append((k6.format(tid=self.test_id, ep="getStatus", st="500", ok="false"), min(3, elapsed // 10), t))
                samples.append((k6.format(tid="local/other/0", ep="getData", st="202", ok="true"), 999, t))
                samples.append((f'k6_dropped_iterations_total{{testid="{self.test_id}"}}', 0, t))
            ready = min(300, 10 * max(0, offset - 10)) if offset < 70 else max(0, 300 - 12 * (offset - 70))
            broker = 'namespace="elves",vhost="/"'
            samples.append((f'rabbitmq_detailed_queue_messages_ready{{{broker},queue="{self.queue}"}}', ready, t))
            samples.append((f'rabbitmq_detailed_queue_messages_unacked{{{broker},queue="{self.queue}"}}',
                            2 if 10 <= offset < 70 else 0, t))
            samples.append((f'rabbitmq_detailed_queue_messages_ready{{{broker},queue="{self.queue}.dlq"}}', 1, t))
            desired = 0 if 40 <= offset < 60 else 1
            ready_replicas = 0 if 40 <= offset < 65 else 1
            samples.append(('kube_deployment_spec_replicas{namespace="elves",deployment="ingestor"}', desired, t))
            samples.append(('kube_deployment_status_replicas_ready{namespace="elves",deployment="ingestor"}', ready_replicas, t))
            samples.append(('kube_deployment_spec_replicas{namespace="elves",deployment="gateway"}', 2, t))
            samples.append(('kube_deployment_status_replicas_ready{namespace="elves",deployment="gateway"}', 2, t))
            pod = 'namespace="elves",pod="ingestor-0",container="ingestor"'
            samples.append((f"kube_pod_container_status_restarts_total{{{pod}}}", 1 if offset >= 30 else 0, t))
            if offset >= 30:  # the kernel's OOM kill: reason OOMKilled, exit code 137
                samples.append((f'kube_pod_container_status_last_terminated_reason{{{pod},reason="OOMKilled"}}', 1, t))
                samples.append((f'kube_pod_container_status_last_terminated_exitcode{{{pod}}}', 137, t))
            samples.append(('kube_pod_container_status_restarts_total{namespace="elves",pod="registry-0",container="registry"}',
                            5, t))
            if 15 <= offset <= 75:  # the journeys' retries (lib/http.js elves_retries)
                samples.append((f'k6_elves_retries_total{{testid="{self.test_id}",endpoint="getStatus"}}',
                                min(4, (offset - 15) // 10), t))
            # The registry's JVM: heap in two pools (old gen grows to 300 MiB at 60 s), GC pauses
            # adding 0.05 s every 5 s from the load's start, half a core of CPU.
            jvm = 'application="registry",namespace="elves",pod="registry-0"'
            samples.append((f'jvm_memory_used_bytes{{{jvm},area="heap",id="G1 Eden Space"}}', 20 * 2**20, t))
            samples.append((f'jvm_memory_used_bytes{{{jvm},area="heap",id="G1 Old Gen"}}',
                            min(280, 100 + 4 * offset) * 2**20, t))
            samples.append((f'jvm_memory_used_bytes{{{jvm},area="nonheap",id="Metaspace"}}', 900 * 2**20, t))
            samples.append((f"jvm_gc_pause_seconds_sum{{{jvm},action=\"end of minor GC\"}}",
                            0.05 * max(0, offset - 10) / 5, t))
            samples.append((f"process_cpu_time_ns_total{{{jvm}}}", 0.5e9 * offset, t))
            if offset >= 50:  # a gateway pod first seen with one restart already: new in the run
                gateway = 'namespace="elves",pod="gateway-1",container="gateway"'
                samples.append((f"kube_pod_container_status_restarts_total{{{gateway}}}", 1, t))
                # ... after its JVM ran out of heap: ExitOnOutOfMemoryError exits with code 3,
                # which Kubernetes reports as reason Error; it counts as an OOM kill too.
                samples.append((f'kube_pod_container_status_last_terminated_reason{{{gateway},reason="Error"}}', 1, t))
                samples.append((f"kube_pod_container_status_last_terminated_exitcode{{{gateway}}}", 3, t))
                # A registry pod that crashed otherwise (exit code 1): a restart, not an OOM kill.
                crashed = 'namespace="elves",pod="registry-1",container="registry"'
                samples.append((f"kube_pod_container_status_restarts_total{{{crashed}}}", 1, t))
                samples.append((f'kube_pod_container_status_last_terminated_reason{{{crashed},reason="Error"}}', 1, t))
                samples.append((f"kube_pod_container_status_last_terminated_exitcode{{{crashed}}}", 1, t))
            samples += self.decoy(offset, t)
        return samples

    def decoy(self, offset: int, t: float) -> list[tuple[str, float, float]]:
        """Another team's system at time t: same names, namespace `other`."""
        ns = f'namespace="{self.decoy_namespace}"'
        gateway = f'{ns},pod="gateway-7",container="gateway"'
        killed = 0 if offset < 20 else 1 if offset < 40 else 3  # OOM-killed during the run
        samples = [
            (f'kube_deployment_spec_replicas{{{ns},deployment="gateway"}}', 5, t),
            (f'kube_deployment_status_replicas_ready{{{ns},deployment="gateway"}}', 5, t),
            (f'kube_deployment_spec_replicas{{{ns},deployment="ingestor"}}', 4, t),
            (f"kube_pod_container_status_restarts_total{{{gateway}}}", killed, t),
            (f'rabbitmq_detailed_queue_messages_ready{{{ns},vhost="/",queue="{self.queue}"}}', 5000, t),
            (f'jvm_memory_used_bytes{{application="gateway",{ns},pod="gateway-7",area="heap",id="G1 Old Gen"}}',
             900 * 2**20, t),
            (f'jvm_memory_used_bytes{{application="registry",{ns},pod="registry-0",area="heap",id="G1 Old Gen"}}',
             2000 * 2**20, t),
            (f'process_cpu_time_ns_total{{application="registry",{ns},pod="registry-0"}}', 3e9 * offset, t),
        ]
        if killed:
            samples += [(f'kube_pod_container_status_last_terminated_reason{{{gateway},reason="OOMKilled"}}', 1, t),
                        (f"kube_pod_container_status_last_terminated_exitcode{{{gateway}}}", 137, t)]
        return samples


RUN = KnownRun()
