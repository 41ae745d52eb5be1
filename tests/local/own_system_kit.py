"""What the small workers that are not Elves (own_system_kafka_worker.py, own_system_queue_worker.py)
and their tests share: the worker's /metrics page on loopback, and the worker as a process a test
starts, kills (SIGKILL, a crash) and starts again, by the PID it started; the stored count
both give the local Prometheus."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def stored_per_test_id(database: str) -> str:
    """orders_stored_total{test_id} from the worker's table `stored`: what its ledger's persisted reads."""
    reader = sqlite3.connect(database)
    try:
        rows = reader.execute("SELECT test_id, count(*) FROM stored GROUP BY test_id").fetchall()
    finally:
        reader.close()
    return "".join(f'orders_stored_total{{test_id="{test_id}"}} {count}\n' for test_id, count in rows)


def serve_metrics(port: int, page: Callable[[], str]) -> None:
    """Serve `page()` on 127.0.0.1:`port` from a thread of its own, for the local Prometheus."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            body = page().encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()


class WorkerProcess:
    """A worker's process (`argv`), its stderr appended to `log`; started once it prints "ready"."""

    def __init__(self, argv: list[str], log: Path):
        self.argv, self.log = argv, log
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=log, text=True)
        assert self.process.stdout is not None and self.process.stdout.readline().strip() == "ready", self.log

    def crash_and_restart(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)
        self.start()

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
