"""The local mode's ports (docs/architecture.md, "Local mode: processes and ports").

All listen on 127.0.0.1. An offset moves the whole set, so a throwaway stack (the
supervisor's own tests) can run beside the real one.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable
from dataclasses import dataclass

from elves.constants import GATEWAY, INGESTOR, REGISTRY

HOST = "127.0.0.1"

# Per-replica base ports: replica in slot i listens on base + i.
_HTTP_BASE = {GATEWAY: 18080, REGISTRY: 18180}
_MANAGEMENT_BASE = {GATEWAY: 19080, REGISTRY: 19180, INGESTOR: 19280}
# Replicas per deployment are bounded by the port ranges above (100 apart).
MAX_SLOTS = 100
MAX_RUNNERS = 100  # k6 runners of one run (spec.load.parallelism's bound): their REST API ports


@dataclass(frozen=True)
class Ports:
    offset: int = 0

    def _at(self, port: int) -> int:
        return port + self.offset

    @property
    def gateway(self) -> int:
        return self._at(8080)

    @property
    def registry(self) -> int:
        return self._at(8081)

    @property
    def supervisor(self) -> int:
        return self._at(9400)

    @property
    def prometheus(self) -> int:
        return self._at(9090)

    @property
    def amqp(self) -> int:
        return self._at(5673)

    @property
    def rabbitmq_prometheus(self) -> int:
        return self._at(15693)

    @property
    def erlang_distribution(self) -> int:
        return self._at(25673)

    @property
    def epmd(self) -> int:
        return self._at(4370)

    @property
    def postgres(self) -> int:
        return self._at(5433)

    @property
    def kafka(self) -> int:
        """A Kafka broker's clients' listener, where a test or a LoadTest needs one (elves.kafka)."""
        return self._at(9092)

    @property
    def kafka_controller(self) -> int:
        return self._at(9093)

    @property
    def kafka_publish(self) -> int:
        """Elves' publisher in front of the broker, where k6 posts load for a topic (elves.kafka.publish)."""
        return self._at(8092)

    @property
    def rabbitmq_publish(self) -> int:
        """Elves' publisher in front of RabbitMQ, where k6 posts load for an exchange or a queue
        (elves.rabbitmq.publish)."""
        return self._at(8093)

    @property
    def kafka_lag(self) -> int:
        """The consumer-group lag reader's /metrics (kafka_exporter's port)."""
        return self._at(9308)

    def k6_api(self, runner: int, warmup: bool = False) -> int:
        """k6's REST API of one local runner (k6 refuses to start when its port is taken); an auto
        warm-up's runners have ports of their own, past the load's (spec.load.parallelism <= 100),
        so a warm-up still stopping never keeps the load's k6 from starting."""
        return self._at(6565 + (MAX_RUNNERS if warmup else 0) + runner)

    def proxied(self) -> dict[str, int]:
        """The deployments reachable through the supervisor's proxy, and its ports."""
        return {GATEWAY: self.gateway, REGISTRY: self.registry}

    def replica_http(self, deployment: str, slot: int) -> int | None:
        base = _HTTP_BASE.get(deployment)
        return None if base is None else self._at(base + slot)

    def replica_management(self, deployment: str, slot: int) -> int:
        return self._at(_MANAGEMENT_BASE[deployment] + slot)

    def url(self, port: int) -> str:
        return f"http://{HOST}:{port}"

    def all(self, slots: int = 2) -> list[int]:
        """Every port of a stack whose deployments run up to `slots` replicas each."""
        fixed = [self.gateway, self.registry, self.supervisor, self.prometheus, self.amqp,
                 self.rabbitmq_prometheus, self.erlang_distribution, self.epmd, self.postgres]
        replicas = [port for name in _MANAGEMENT_BASE for slot in range(slots)
                    for port in (self.replica_http(name, slot), self.replica_management(name, slot))
                    if port is not None]
        return fixed + replicas


def listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex((HOST, port)) == 0


def free_offset(candidates: Iterable[int], slots: int = 2) -> int | None:
    """The first offset none of whose ports is in use (other stacks may share the machine)."""
    for offset in candidates:
        if not any(listening(port) for port in Ports(offset).all(slots)):
            return offset
    return None
