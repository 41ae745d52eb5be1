"""Load published into a Kafka topic by an unmodified k6: an HTTP door of Elves' own in front of
the broker. k6 stays the load generator (the plan, stages, sweeps and the open model's arrival
rate are its scenarios, as for HTTP load), each iteration one POST here; the answer comes once
the broker has confirmed the record (acks=all), so k6's 2xx of the endpoint are exactly the
records the broker accepted (the ledger's `accepted: {endpoint: ...}`).

    POST /topics/<topic>   body = the record's value; the request's test-id header (named by
                           --header, the SystemUnderTest's testIdHeader) becomes a record header
                           of the same name; an optional X-Record-Key header is the record's key.
    -> 200 {"topic", "partition", "offset"} once confirmed; 400 for a request it cannot publish
       (naming what is wrong); 503 when the broker did not confirm it in time.

    python -m elves.kafka.publish --bootstrap 127.0.0.1:9092 --listen 127.0.0.1:8092 --header X-Test-Id
"""

from __future__ import annotations

import argparse
import re
import threading

from kafka import KafkaProducer
from kafka.errors import KafkaError
from kafka.producer.future import RecordMetadata

from elves.door import Door, NotConfirmed, publish_door, serve

TOPIC_PATH = re.compile(r"^/topics/([A-Za-z0-9._-]{1,249})$")
KEY_HEADER = "X-Record-Key"
MAX_BODY_BYTES = 1_000_000  # Kafka's default largest record
# How long one request waits for the broker's confirmation before it answers 503: longer than a
# healthy broker ever takes here, short enough that k6 (60 s timeout) sees the failure as a failure.
CONFIRM_TIMEOUT_SECONDS = 10.0
# A few milliseconds of batching: k6's concurrent requests share a produce request to the broker.
LINGER_MS = 2


class Records:
    """One producer for every request (kafka-python's producer is thread-safe), made at the first
    request rather than at start, so a broker that is not up yet is a 503, not a publisher that
    never starts; acks=all: confirmed means written to the log."""

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap
        self.lock = threading.Lock()
        self.producer: KafkaProducer | None = None

    def send(self, topic: str, value: bytes, key: bytes | None, headers: list[tuple[str, bytes]]) -> RecordMetadata:
        """The record's place in the log once the broker confirmed it; KafkaError otherwise."""
        with self.lock:
            if self.producer is None:
                self.producer = KafkaProducer(
                    bootstrap_servers=self.bootstrap, acks="all", linger_ms=LINGER_MS, client_id="elves-publish",
                    max_block_ms=int(CONFIRM_TIMEOUT_SECONDS * 1000),
                    bootstrap_timeout_ms=int(CONFIRM_TIMEOUT_SECONDS * 1000))
            producer = self.producer
        return producer.send(topic, value=value, key=key, headers=headers).get(timeout=CONFIRM_TIMEOUT_SECONDS)


def handler(records: Records, test_id_header: str) -> type[Door]:
    def send(match: re.Match, body: bytes, test_id: str, headers: dict[str, str]) -> dict:
        key = headers.get(KEY_HEADER)
        try:
            written = records.send(match[1], body, key.encode() if key else None, [(test_id_header, test_id.encode())])
        except KafkaError as error:
            raise NotConfirmed(type(error).__name__) from error
        return {"topic": written.topic, "partition": written.partition, "offset": written.offset}

    return publish_door(TOPIC_PATH, "POST /topics/<topic>", send, test_id_header, MAX_BODY_BYTES)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m elves.kafka.publish", description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="the broker, HOST:PORT")
    parser.add_argument("--listen", required=True, help="where k6 posts, HOST:PORT")
    parser.add_argument("--header", required=True, help="the SystemUnderTest's testIdHeader, e.g. X-Test-Id")
    args = parser.parse_args(argv)
    serve(parser, args.listen, handler(Records(args.bootstrap), args.header),
          f"ready: POST http://{args.listen}/topics/<topic> publishes to {args.bootstrap}")


if __name__ == "__main__":
    main()
