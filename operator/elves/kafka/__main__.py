"""Kafka beside the local stack, for a test of a Kafka-fed system (docs/own-system.md): the broker,
the lag reader where the local Prometheus scrapes it, and the publisher k6 posts to, on the
stack's ports (ELVES_LOCAL_PORT_OFFSET), the broker's data under the state directory
(ELVES_STATE_DIR, .elves/kafka). Runs in the foreground until interrupted (Ctrl-C or SIGTERM),
then stops all three by the PIDs it started; nothing of it is part of every local stack.

    .venv/bin/python -m elves.kafka [--header X-Test-Id]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import time

from elves.kafka.broker import (READY_POLL_SECONDS, STOP_GRACE_SECONDS, Broker, BrokerError, default_libs,
                                pinned_version)
from elves.local import http
from elves.local.ports import HOST, Ports
from elves.local.processes import Child
from elves.local.settings import Settings

# A Python process's start and its server's bind: a second or two, more on a busy machine.
LISTEN_TIMEOUT_SECONDS = 30.0


def _python(name: str, log: os.PathLike, *args: str) -> Child:
    env = {k: os.environ[k] for k in ("PATH", "LANG", "TZ") if k in os.environ}
    return Child(name, [sys.executable, "-m", f"elves.kafka.{name}", *args], env, log)  # type: ignore[arg-type]


async def _listening(child: Child, port: int) -> None:
    """Until the child listens on its port; BrokerError when it exits or does not within the deadline."""
    deadline = time.monotonic() + LISTEN_TIMEOUT_SECONDS
    while not await http.port_open(HOST, port):
        if child.poll() is not None or time.monotonic() > deadline:
            raise BrokerError(f"elves.kafka.{child.name} did not listen on {HOST}:{port}: see {child.log_path}")
        await asyncio.sleep(READY_POLL_SECONDS)


async def run(header: str) -> None:
    settings = Settings.from_env()
    ports = Ports(settings.port_offset)
    home = settings.state_dir / "kafka"
    broker = Broker(home=home, libs=default_libs(pinned_version(settings.repo_dir)),
                    port=ports.kafka, controller_port=ports.kafka_controller)
    children = [await broker.start()]  # BrokerError, naming the log or the install script
    try:
        children.append(_python("lag", home / "lag.log", "--bootstrap", broker.bootstrap,
                                "--listen", f"{HOST}:{ports.kafka_lag}"))
        children.append(_python("publish", home / "publish.log", "--bootstrap", broker.bootstrap,
                                "--listen", f"{HOST}:{ports.kafka_publish}", "--header", header))
        for child, port in zip(children[1:], (ports.kafka_lag, ports.kafka_publish)):
            child.start()
            await _listening(child, port)
        print(f"ready: broker {broker.bootstrap}, lag at http://{HOST}:{ports.kafka_lag}/metrics (scraped by the"
              f" local Prometheus), publish at http://{HOST}:{ports.kafka_publish}/topics/<topic>", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
    finally:
        for child in reversed(children):
            await child.stop(STOP_GRACE_SECONDS)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m elves.kafka", description=__doc__.splitlines()[0])
    parser.add_argument("--header", default="X-Test-Id",
                        help="the SystemUnderTest's testIdHeader, which the publisher puts on each record")
    args = parser.parse_args(argv)
    try:
        asyncio.run(run(args.header))
    except BrokerError as error:
        sys.exit(f"elves.kafka: {error}")


if __name__ == "__main__":
    main()
