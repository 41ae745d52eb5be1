"""A small RabbitMQ-fed worker that is not Elves, for tier 2's queue-fed test: a consumer of one
queue that stores each message in its own SQLite database (one row per message, keyed by its
message id, with the test id its header carries) more slowly than the load publishes, so the
queue fills and must drain, and acknowledges each message only after storing it: a kill loses
nothing (what it held unacknowledged is delivered again) and a message stored twice is one row.
Its /metrics gives the messages stored per test id (its database also keeps the ids delivered again), what its SystemUnderTest's ledger reads
(loadtests/examples/own-system-rabbitmq/orders.yaml describes it).

    python own_system_queue_worker.py AMQP_PORT VHOST USER PASSWORD_FILE QUEUE DATABASE PORT STORE_PER_SECOND

Listens on 127.0.0.1 only; prints "ready" once consuming and its metrics answer.
"""

from __future__ import annotations

import sqlite3
import sys
import time
from pathlib import Path

import pika
from own_system_kit import serve_metrics, stored_per_test_id

TEST_ID_HEADER = "X-Test-Id"
PREFETCH = 20  # messages in hand, unacknowledged: what a kill sends back to the queue


def open_store(path: str) -> sqlite3.Connection:
    store = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    store.execute("PRAGMA journal_mode=WAL")
    store.execute("CREATE TABLE IF NOT EXISTS stored (message_id TEXT PRIMARY KEY, test_id TEXT)")
    # The messages delivered again (a killed consumer's unacknowledged ones), for the test to see the kill mattered.
    store.execute("CREATE TABLE IF NOT EXISTS redelivered (message_id TEXT)")
    return store


def main(amqp_port: str, vhost: str, user: str, password_file: str, queue: str, database: str, port: str,
         store_per_second: str) -> None:
    store = open_store(database)
    pause = 1.0 / float(store_per_second)
    credentials = pika.PlainCredentials(user, Path(password_file).read_text().strip())
    connection = pika.BlockingConnection(pika.ConnectionParameters(
        host="127.0.0.1", port=int(amqp_port), virtual_host=vhost, credentials=credentials))
    channel = connection.channel()
    channel.basic_qos(prefetch_count=PREFETCH)

    def on_message(ch, method, properties, body: bytes) -> None:
        test_id = (properties.headers or {}).get(TEST_ID_HEADER, "")
        if method.redelivered:
            store.execute("INSERT INTO redelivered VALUES (?)", (properties.message_id,))
        store.execute("INSERT OR IGNORE INTO stored VALUES (?, ?)", (properties.message_id, test_id))
        time.sleep(pause)
        ch.basic_ack(method.delivery_tag)  # after storing: at-least-once

    channel.basic_consume(queue, on_message)

    serve_metrics(int(port), lambda: stored_per_test_id(database))
    print("ready", flush=True)
    channel.start_consuming()


if __name__ == "__main__":
    main(*sys.argv[1:])
