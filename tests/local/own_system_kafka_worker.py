"""A small Kafka-fed worker that is not Elves, for tier 2's Kafka test: a consumer group member
that stores each record of a topic in its own SQLite database (one row per record, keyed by its
partition and offset, with the test id its header carries) more slowly than the load publishes,
so a lag builds and must drain. Its /metrics gives the records stored per test id, what its
SystemUnderTest's ledger reads, and the records of the batch in hand not stored yet (loadtests/examples/own-system-kafka/orders.yaml describes it).

    python own_system_kafka_worker.py BOOTSTRAP TOPIC GROUP DATABASE PORT STORE_PER_SECOND MODE

MODE says when it commits a polled batch's offsets to the group:
  after   once every record of the batch is stored (at-least-once: a kill loses nothing, and a
          record stored twice is one row, since its key is its place in the log)
  before  as soon as the batch is polled, before storing it (at-most-once: a kill while storing
          loses the rest of the batch, which the group will never read again)

Listens on 127.0.0.1 only; prints "ready" once its metrics answer.
"""

from __future__ import annotations

import sqlite3
import sys
import time

from kafka import KafkaConsumer
from kafka.structs import OffsetAndMetadata
from own_system_kit import serve_metrics, stored_per_test_id

TEST_ID_HEADER = "X-Test-Id"
BATCH = 20


def open_store(path: str) -> sqlite3.Connection:
    store = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    store.execute("PRAGMA journal_mode=WAL")
    store.execute("CREATE TABLE IF NOT EXISTS stored (partition INTEGER, offset INTEGER, test_id TEXT,"
                  " PRIMARY KEY (partition, offset))")
    return store


class Progress:
    """The records of the batch in hand not stored yet: a test kills the worker while there are some."""

    unstored = 0


def work(consumer: KafkaConsumer, store: sqlite3.Connection, pause: float, commit_first: bool) -> None:
    while True:
        batch = consumer.poll(timeout_ms=500, max_records=BATCH)
        offsets = {tp: OffsetAndMetadata(records[-1].offset + 1, "", -1) for tp, records in batch.items()}
        if commit_first and offsets:
            consumer.commit(offsets)
        Progress.unstored = sum(len(records) for records in batch.values())
        for tp, records in batch.items():
            for record in records:
                test_id = dict(record.headers).get(TEST_ID_HEADER, b"").decode()
                store.execute("INSERT OR IGNORE INTO stored VALUES (?, ?, ?)", (tp.partition, record.offset, test_id))
                Progress.unstored -= 1
                time.sleep(pause)
        if not commit_first and offsets:
            consumer.commit(offsets)


def metrics(path: str) -> str:
    return f"orders_batch_unstored {Progress.unstored}\n" + stored_per_test_id(path)


def main(bootstrap: str, topic: str, group: str, database: str, port: str, store_per_second: str, mode: str) -> None:
    if mode not in ("after", "before"):
        sys.exit(f"MODE {mode!r}: after or before")
    store = open_store(database)
    # The broker's shortest session: a member killed without leaving is dropped from the group
    # (and its partitions handed to the restarted one) after 6 s rather than kafka-python's 10.
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                             auto_offset_reset="earliest", session_timeout_ms=6000, heartbeat_interval_ms=2000)

    serve_metrics(int(port), lambda: metrics(database))
    print("ready", flush=True)
    work(consumer, store, 1.0 / float(store_per_second), mode == "before")


if __name__ == "__main__":
    main(*sys.argv[1:])
