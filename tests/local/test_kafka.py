"""Tier 2: Elves' Kafka parts against a real KRaft broker assembled by tools/install-kafka.sh.
The lag reader's page says how many records a group has not committed, topic by topic, falls to
0 once the group has committed everything, and a broker that cannot be read is a failed scrape
(503), never a lag of 0 that would end a drain too early. The publisher k6 posts to answers 200
only for a record the broker confirmed, which carries the test id in a header, and 503 when the
broker does not confirm. `python -m elves.kafka` runs the three on the stack's ports until stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator

import polling
import pytest
import requests
from engine_testkit import free_port
from kafka import KafkaConsumer, KafkaProducer
from kafka.structs import OffsetAndMetadata
from kafka_kit import RunningKafka, kafka_process, lag_reader, lags, start_kafka

from elves.local.ports import HOST, Ports, listening

TOPIC = "orders.placed"
GROUP = "orders-worker"
RECORDS = 300
DONE_FIRST = 100
CONSUME_SECONDS = 30.0


@pytest.fixture(scope="module")
def kafka(tmp_path_factory) -> Iterator[RunningKafka]:
    yield from start_kafka(tmp_path_factory.mktemp("kafka"))


def _publish(bootstrap: str, count: int) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    futures = [producer.send(TOPIC, f"order {i}".encode()) for i in range(count)]
    producer.flush(timeout=30)
    producer.close()
    assert all(f.succeeded() for f in futures), "the broker did not confirm every record"


def _consume_and_commit(consumer: KafkaConsumer, count: int) -> None:
    """Process exactly `count` records and commit exactly those, partition by partition."""
    done: Counter = Counter()
    last: dict = {}
    processed = 0

    def poll() -> bool:
        nonlocal processed
        for partition, records in consumer.poll(timeout_ms=500, max_records=count - processed).items():
            for record in records:
                last[partition] = record.offset
                processed += 1
        return processed >= count

    polling.wait_for(poll, f"{count} records consumed", CONSUME_SECONDS, interval=0)
    consumer.commit({p: OffsetAndMetadata(offset + 1, "", -1) for p, offset in last.items()})


def test_the_lag_is_what_the_group_has_not_committed_and_falls_to_zero(kafka: RunningKafka) -> None:
    consumer = KafkaConsumer(TOPIC, bootstrap_servers=kafka.broker.bootstrap, group_id=GROUP,
                             enable_auto_commit=False, auto_offset_reset="earliest")
    try:
        _publish(kafka.broker.bootstrap, RECORDS)
        _consume_and_commit(consumer, DONE_FIRST)
        assert lags(kafka.lag_url) == {(GROUP, TOPIC): RECORDS - DONE_FIRST}
        _consume_and_commit(consumer, RECORDS - DONE_FIRST)
        assert lags(kafka.lag_url) == {(GROUP, TOPIC): 0}
    finally:
        consumer.close()


def test_a_broker_that_cannot_be_read_fails_the_scrape_instead_of_reading_zero(tmp_path) -> None:
    nothing_there = f"{HOST}:{free_port()}"
    with lag_reader(nothing_there, tmp_path / "lag-reader.log") as url:
        answer = requests.get(url, timeout=10)
    assert answer.status_code == 503
    assert nothing_there in answer.text
    assert "kafka_consumergroup_lag" not in answer.text


def test_the_publisher_answers_once_the_broker_confirmed_and_puts_the_test_id_on_the_record(
        kafka: RunningKafka, tmp_path) -> None:
    topic = "orders.published"
    with kafka_process("publish", tmp_path / "publish.log", "--bootstrap", kafka.broker.bootstrap,
                       "--header", "X-Test-Id") as url:
        answers = [requests.post(f"{url}/topics/{topic}", data=f'{{"n": {i}}}', headers={"X-Test-Id": "shop/t/0"},
                                 timeout=15) for i in range(20)]
        assert [a.status_code for a in answers] == [200] * 20
        offsets = {(a.json()["partition"], a.json()["offset"]) for a in answers}
        assert len(offsets) == 20  # each a record of its own, written where the answer says
        no_id = requests.post(f"{url}/topics/{topic}", data="{}", timeout=15)
        assert (no_id.status_code, no_id.json()) == (400, {"error": "no X-Test-Id header: the test id travels in it"})
        assert requests.post(f"{url}/topics/no topic", data="{}", headers={"X-Test-Id": "x"}, timeout=15).status_code \
            == 404
    reader = KafkaConsumer(topic, bootstrap_servers=kafka.broker.bootstrap, auto_offset_reset="earliest",
                           consumer_timeout_ms=5000)
    try:
        records = list(reader)
    finally:
        reader.close()
    assert {(r.partition, r.offset) for r in records} == offsets
    assert {r.headers[0] for r in records} == {("X-Test-Id", b"shop/t/0")}
    assert sorted(r.value for r in records) == sorted(f'{{"n": {i}}}'.encode() for i in range(20))


def test_the_publisher_answers_503_when_the_broker_does_not_confirm(tmp_path) -> None:
    nothing_there = f"{HOST}:{free_port()}"
    with kafka_process("publish", tmp_path / "publish.log", "--bootstrap", nothing_there, "--header", "X-Test-Id") as url:
        answer = requests.post(f"{url}/topics/orders", data="{}", headers={"X-Test-Id": "x"}, timeout=30)
    assert answer.status_code == 503
    assert answer.json()["error"].startswith("the broker did not confirm the message")


def test_python_m_elves_kafka_runs_the_three_on_the_stacks_ports_until_stopped(tmp_path) -> None:
    # An offset at which none of the four is taken (other stacks and tests share the machine).
    offset = next(o for o in range(4000, 6000, 100)
                  if not any(listening(p) for p in kafka_ports(Ports(o))))
    ports = Ports(offset)
    env = {**os.environ, "ELVES_LOCAL_PORT_OFFSET": str(offset), "ELVES_STATE_DIR": str(tmp_path)}
    process = subprocess.Popen([sys.executable, "-m", "elves.kafka", "--header", "X-Test-Id"], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith("ready: broker"), first
        answer = requests.post(f"http://{HOST}:{ports.kafka_publish}/topics/orders", data="{}",
                               headers={"X-Test-Id": "t"}, timeout=30)
        assert answer.status_code == 200, answer.text
        assert requests.get(f"http://{HOST}:{ports.kafka_lag}/metrics", timeout=10).status_code == 200
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    assert not any(listening(p) for p in kafka_ports(ports)), "a part of it still listens after it stopped"
    assert (tmp_path / "kafka" / "data" / "meta.properties").exists()  # its data under the state directory


def kafka_ports(ports: Ports) -> list[int]:
    return [ports.kafka, ports.kafka_controller, ports.kafka_lag, ports.kafka_publish]
