"""A reader of Kafka consumer-group lag for Prometheus: what a SystemUnderTest's `queues.kafka`
reads as the depth the drain waits on and the verdict judges.

Elves' own, rather than a third-party exporter: the one most used (danielqsj/kafka_exporter) is
not among the Go modules the module proxy serves here, and a lag reader is one admin client and
a page. Its series have that exporter's names and labels, so the same queries serve a cluster
that runs it:

    kafka_consumergroup_lag{consumergroup, topic, partition}             end offset - committed
    kafka_consumergroup_current_offset{consumergroup, topic, partition}  the group's committed offset
    kafka_topic_partition_current_offset{topic, partition}               the partition's end offset

A partition the group has committed nothing on lags by all it holds (end - log start): nothing of
it is done. Each scrape reads the broker afresh. When the broker cannot be read the page answers
503, so Prometheus marks the target down and the lag goes stale: an unknown lag is never 0.

    python -m elves.kafka.lag --bootstrap 127.0.0.1:9092 --listen 127.0.0.1:9308
"""

from __future__ import annotations

import argparse
import logging
import threading
from dataclasses import dataclass

from kafka import KafkaAdminClient
from kafka.admin import OffsetSpec
from kafka.structs import TopicPartition

from elves.door import Door, serve

log = logging.getLogger(__name__)

# The bounds of one connect and of one request: a broker that does not answer within them fails
# the scrape rather than holding the page (Prometheus' own scrape timeout is 4 s locally).
BOOTSTRAP_TIMEOUT_MS = 3000
REQUEST_TIMEOUT_MS = 3000
TEXT = "text/plain; version=0.0.4"  # Prometheus' text format


@dataclass(frozen=True)
class PartitionLag:
    group: str
    topic: str
    partition: int
    committed: int  # the group's committed offset; the log start when it has committed none
    end: int  # the partition's end offset (the next record's)

    @property
    def lag(self) -> int:
        return max(0, self.end - self.committed)


def read_lags(admin: KafkaAdminClient) -> list[PartitionLag]:
    """Every consumer group's lag on every partition of every topic it has committed on."""
    lags: list[PartitionLag] = []
    for group in sorted(g["group_id"] for g in admin.list_groups()):
        committed = admin.list_group_offsets(group).get(group, {})
        topics = sorted({tp.topic for tp in committed})
        if not topics:
            continue
        partitions = [TopicPartition(t["name"], p["partition_index"])
                      for t in admin.describe_topics(topics) for p in t["partitions"]]
        ends = admin.list_partition_offsets({tp: OffsetSpec.LATEST for tp in partitions})
        unread = [tp for tp in partitions if tp not in committed or committed[tp].offset < 0]
        starts = admin.list_partition_offsets({tp: OffsetSpec.EARLIEST for tp in unread}) if unread else {}
        for tp in sorted(partitions):
            offset = starts[tp].offset if tp in starts else committed[tp].offset
            lags.append(PartitionLag(group, tp.topic, tp.partition, offset, ends[tp].offset))
    return lags


def _labels(**labels: object) -> str:
    text = ",".join(f'{k}="{_escape(str(v))}"' for k, v in labels.items())
    return "{" + text + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render(lags: list[PartitionLag]) -> str:
    """Prometheus' text format, with kafka_exporter's names and labels."""
    lines = ["# HELP kafka_consumergroup_lag A consumer group's lag on a partition: end offset - committed offset.",
             "# TYPE kafka_consumergroup_lag gauge"]
    lines += [f"kafka_consumergroup_lag{_labels(consumergroup=x.group, topic=x.topic, partition=x.partition)} {x.lag}"
              for x in lags]
    lines += ["# HELP kafka_consumergroup_current_offset A consumer group's committed offset on a partition.",
              "# TYPE kafka_consumergroup_current_offset gauge"]
    lines += [f"kafka_consumergroup_current_offset{_labels(consumergroup=x.group, topic=x.topic, partition=x.partition)}"
              f" {x.committed}" for x in lags]
    lines += ["# HELP kafka_topic_partition_current_offset A partition's end offset.",
              "# TYPE kafka_topic_partition_current_offset gauge"]
    ends = sorted({(x.topic, x.partition): x.end for x in lags}.items())
    lines += [f"kafka_topic_partition_current_offset{_labels(topic=t, partition=p)} {end}" for (t, p), end in ends]
    return "\n".join(lines) + "\n"


class LagReader:
    """One admin client, used by one scrape at a time (kafka-python's client is not for threads)."""

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap
        self.lock = threading.Lock()
        self.admin: KafkaAdminClient | None = None

    def page(self) -> str:
        with self.lock:
            try:
                if self.admin is None:
                    self.admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, client_id="elves-lag-reader",
                                                  request_timeout_ms=REQUEST_TIMEOUT_MS,
                                                  bootstrap_timeout_ms=BOOTSTRAP_TIMEOUT_MS)
                return render(read_lags(self.admin))
            except Exception:
                # A broker restarted or gone: start afresh at the next scrape, fail this one.
                if self.admin is not None:
                    self.admin.close()
                    self.admin = None
                raise


def handler(reader: LagReader) -> type[Door]:
    class Handler(Door):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            if self.path != "/metrics":
                self.answer(404, b"not found: the lag is at /metrics\n", TEXT)
                return
            try:
                self.answer(200, reader.page().encode(), TEXT)
            except Exception as error:  # the broker could not be read: the scrape fails, the lag goes stale
                log.warning("reading the lag from %s failed: %s", reader.bootstrap, error)
                self.answer(503, f"the lag could not be read from {reader.bootstrap}: {type(error).__name__}\n".encode(),
                            TEXT)

    return Handler


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m elves.kafka.lag", description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="the broker, HOST:PORT")
    parser.add_argument("--listen", required=True, help="where Prometheus scrapes /metrics, HOST:PORT")
    args = parser.parse_args(argv)
    serve(parser, args.listen, handler(LagReader(args.bootstrap)),
          f"ready: the lag of {args.bootstrap} at http://{args.listen}/metrics")


if __name__ == "__main__":
    main()
