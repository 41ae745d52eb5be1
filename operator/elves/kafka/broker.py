"""A single-node Apache Kafka broker in KRaft mode (broker and controller in one JVM), from the jars
tools/install-kafka.sh assembles, listening on 127.0.0.1 only, its data under a directory of its own.

Started only where a test or a LoadTest needs it: a JVM of a few hundred MiB is no part of every
local stack. Its storage is formatted once (KRaft needs a cluster id before the first start); a
later start keeps the topics and the groups' committed offsets.
"""

from __future__ import annotations

import asyncio
import base64
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from elves.cache import cache_root
from elves.local import http
from elves.local.ports import HOST
from elves.local.processes import Child, run_command

FORMAT_TIMEOUT_SECONDS = 60.0  # the storage tool is one short JVM run (about 3 s here)
# From start to the broker's port answering: about 5 s on 2 idle cores, a JVM's start under load more.
START_TIMEOUT_SECONDS = 90.0
STOP_GRACE_SECONDS = 30.0  # a clean shutdown flushes the logs and leaves the controller quorum
READY_POLL_SECONDS = 0.25
# Small and fixed: a test's broker holds a few topics of short loads, beside the services on 2 cores.
JVM_OPTIONS = ("-Xms128m", "-Xmx384m", "-XX:+UseSerialGC", "-Djava.awt.headless=true")


class BrokerError(RuntimeError):
    """The broker cannot be prepared or started; the message names what to do."""


def default_libs(version: str) -> Path:
    """Where tools/install-kafka.sh puts the jars of a Kafka version."""
    return cache_root() / "kafka" / version / "libs"


def pinned_version(repo: Path) -> str:
    """The Kafka version a checkout pins: tools/versions.env's KAFKA_VERSION (the install script's)."""
    versions = repo / "tools" / "versions.env"
    for line in versions.read_text().splitlines():
        if line.startswith("KAFKA_VERSION="):
            return line.split("=", 1)[1].strip()
    raise BrokerError(f"{versions} pins no KAFKA_VERSION")


@dataclass(frozen=True)
class Broker:
    home: Path  # its data, configuration and log
    libs: Path  # the jars (tools/install-kafka.sh)
    port: int  # the clients' listener
    controller_port: int  # KRaft's controller listener, on loopback too

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.home / "broker.log"

    def properties(self) -> str:
        data = self.home / "data"
        return "\n".join([
            "process.roles=broker,controller",
            "node.id=1",
            f"controller.quorum.voters=1@{HOST}:{self.controller_port}",
            f"listeners=PLAINTEXT://{HOST}:{self.port},CONTROLLER://{HOST}:{self.controller_port}",
            f"advertised.listeners=PLAINTEXT://{HOST}:{self.port}",
            "controller.listener.names=CONTROLLER",
            "inter.broker.listener.name=PLAINTEXT",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            f"log.dirs={data}",
            # One node: the internal topics cannot have more replicas than that.
            "offsets.topic.replication.factor=1",
            "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1",
            "share.coordinator.state.topic.replication.factor=1",
            "share.coordinator.state.topic.min.isr=1",
            # A consumer group of a test starts consuming at once, not after the 3 s default.
            "group.initial.rebalance.delay.ms=0",
            # Topics a test names come into being on first use, with this many partitions.
            "auto.create.topics.enable=true",
            "num.partitions=2",
            "",
        ])

    def _java(self, main: str, *args: str) -> list[str]:
        log4j = self.home / "log4j2.properties"
        return ["java", *JVM_OPTIONS, f"-Dlog4j2.configurationFile={log4j}",
                "-cp", f"{self.libs}/*", main, *args]

    async def prepare(self) -> None:
        """Write the configuration and format the storage once."""
        if not any(self.libs.glob("kafka_2.13-*.jar")):
            raise BrokerError(f"no Kafka jars in {self.libs}: run tools/install-kafka.sh")
        self.home.mkdir(parents=True, exist_ok=True)
        os.chmod(self.home, 0o700)
        (self.home / "server.properties").write_text(self.properties())
        (self.home / "log4j2.properties").write_text(LOG4J2)
        if (self.home / "data" / "meta.properties").exists():
            return
        code, output = await run_command(
            self._java("kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id()}",
                       "--config", str(self.home / "server.properties")),
            timeout=FORMAT_TIMEOUT_SECONDS)
        if code != 0:
            raise BrokerError(f"formatting the broker's storage in {self.home / 'data'} failed: {output.strip()}")

    def child(self) -> Child:
        env = {k: os.environ[k] for k in ("PATH", "LANG", "TZ", "JAVA_HOME") if k in os.environ}
        return Child("kafka", self._java("kafka.Kafka", str(self.home / "server.properties")), env, self.log_path)

    async def start(self) -> Child:
        """Prepare, start and wait until the clients' port answers (or fail, naming the log)."""
        await self.prepare()
        child = self.child()
        child.start()
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not await http.port_open(HOST, self.port):
            if child.poll() is not None:
                raise BrokerError(f"kafka exited with code {child.poll()} while starting: see {self.log_path}")
            if time.monotonic() > deadline:
                await child.stop(STOP_GRACE_SECONDS)
                raise BrokerError(f"kafka did not listen on {self.bootstrap} within "
                                  f"{START_TIMEOUT_SECONDS:.0f} s: see {self.log_path}")
            await asyncio.sleep(READY_POLL_SECONDS)
        return child


def cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes in URL-safe base64 without padding, as StorageTool's random-uuid.

    Like Kafka's own Uuid.randomUuid, never one that starts with "-": the storage tool's argument
    parser reads such an id as an option and refuses the format (one start in 64 failed so).
    """
    while True:
        candidate = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not candidate.startswith("-"):
            return candidate


# Warnings and the broker's own start and stop lines; the request logs stay off (one line per request).
LOG4J2 = """status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.out.ref = out
logger.server.name = kafka.server.KafkaRaftServer
logger.server.level = info
"""
