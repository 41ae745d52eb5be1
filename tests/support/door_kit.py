"""One of Elves' small HTTP doors (elves.door: the Kafka lag reader, the Kafka and RabbitMQ
publishers) as a process of a test, on a free loopback port unless told one, stopped by its PID."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import polling
import requests
from engine_testkit import free_port

from elves.local.ports import HOST

READY_SECONDS = 30.0  # a Python process's start and bind, on a busy machine


@contextmanager
def door_process(module: str, log: Path, *args: str, port: int | None = None) -> Iterator[str]:
    """`python -m <module> ... --listen <port>` until the block ends; yields its URL once it
    answers at all (a 503 is an answer: the broker could not be read)."""
    port = port or free_port()
    with open(log, "ab") as out:
        process = subprocess.Popen([sys.executable, "-m", module, *args, "--listen", f"{HOST}:{port}"],
                                   stdout=out, stderr=subprocess.STDOUT)
    url = f"http://{HOST}:{port}"
    try:
        polling.wait_for(lambda: requests.get(url, timeout=10).status_code, f"{module} answering",
                         READY_SECONDS, ignore=(requests.RequestException,))
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)
