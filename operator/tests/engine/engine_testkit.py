"""Real servers for the engine's tests: Debian's Prometheus (optionally backfilled) and k6.

Imported by conftest.py and by tests (a unique module name, so it cannot clash with
another directory's helpers).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

PROMETHEUS_BINARY = os.environ.get("ELVES_PROMETHEUS_BINARY", "/usr/bin/prometheus")
K6_BINARY = Path(os.environ.get("ELVES_CACHE", Path.home() / ".cache" / "elves")) / "bin" / "k6"


def require(what: str, present: bool, fix: str) -> None:
    """Skip when a prerequisite is missing; under CI=true, fail instead."""
    if present:
        return
    message = f"{what} is missing ({fix})"
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true and a prerequisite is missing: {message}", pytrace=False)
    pytest.skip(message)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrometheusServer:
    """Debian's Prometheus on a free loopback port, with the remote-write receiver and
    native histograms as the local stack runs it; stopped by its PID."""

    def __init__(self, workdir: Path, data_dir: Path | None = None):
        require("prometheus", Path(PROMETHEUS_BINARY).exists() or shutil.which("prometheus") is not None,
                "apt-get install prometheus, or tools/install-local-deps.sh")
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
        self._wait_ready(deadline=time.monotonic() + 30)

    def _wait_ready(self, deadline: float) -> None:
        import requests

        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"prometheus exited with {self.process.returncode}; see {self.log.name}")
            try:
                if requests.get(f"{self.url}/-/ready", timeout=1).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.2)  # polling a starting server, with the deadline above
        raise RuntimeError(f"prometheus not ready within 30 s; see {self.log.name}")

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
    require("promtool", promtool is not None, "apt-get install prometheus")
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
