"""A Kafka broker and its lag reader for the local tier's Kafka tests, started only by the tests
that ask for them (a JVM of its own is no part of every tier-2 run): the jars of
tools/install-kafka.sh (`make test-local` installs them), free loopback ports, a throwaway
directory; both stopped by the PIDs started here."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

import requests
from door_kit import door_process
from engine_testkit import free_port
from prerequisites import require

from elves.kafka.broker import STOP_GRACE_SECONDS, Broker, default_libs, pinned_version

REPO = Path(__file__).resolve().parents[2]


@dataclass
class RunningKafka:
    broker: Broker
    lag_url: str  # the lag reader's /metrics


def kafka_process(module: str, log: Path, *args: str, port: int | None = None) -> AbstractContextManager[str]:
    """`python -m elves.kafka.<module> ...` as door_kit.door_process runs it; yields its URL."""
    return door_process(f"elves.kafka.{module}", log, *args, port=port)


@contextmanager
def lag_reader(bootstrap: str, log: Path, port: int | None = None) -> Iterator[str]:
    """The lag reader of `bootstrap`; yields its /metrics URL."""
    with kafka_process("lag", log, "--bootstrap", bootstrap, port=port) as url:
        yield f"{url}/metrics"


def start_kafka(home: Path, lag_port: int | None = None) -> Iterator[RunningKafka]:
    """A broker and a lag reader pointed at it (on `lag_port`, where the local Prometheus scrapes
    it, or a free port), until the generator is closed."""
    libs = default_libs(pinned_version(REPO))
    require(any(libs.glob("kafka_2.13-*.jar")), f"Kafka's jars are not in {libs}: run tools/install-kafka.sh")
    broker = Broker(home=home, libs=libs, port=free_port(), controller_port=free_port())
    child = asyncio.run(broker.start())
    try:
        with lag_reader(broker.bootstrap, home / "lag-reader.log", lag_port) as url:
            yield RunningKafka(broker, url)
    finally:
        asyncio.run(child.stop(STOP_GRACE_SECONDS))


def lags(url: str) -> dict[tuple[str, str], int]:
    """(group, topic) -> lag summed over partitions, as the lag reader's page says it."""
    response = requests.get(url, timeout=5)
    response.raise_for_status()
    totals: dict[tuple[str, str], int] = {}
    for line in response.text.splitlines():
        if line.startswith("kafka_consumergroup_lag{"):
            labels, value = line.removeprefix("kafka_consumergroup_lag{").rsplit("} ", 1)
            fields = dict(part.split("=", 1) for part in labels.split(","))
            key = (fields["consumergroup"].strip('"'), fields["topic"].strip('"'))
            totals[key] = totals.get(key, 0) + int(value)
    return totals
