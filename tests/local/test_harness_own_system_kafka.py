"""A Kafka-fed worker that is not Elves, judged in the local mode (tests/local/
own_system_kafka_worker.py): `elves run` publishes the example's load into its topic through an
unmodified k6 and Elves' publisher, waits for its consumer group's lag (the lag reader, scraped by
the local Prometheus) to fall to 0 and its ledger to complete, and judges the ledger: accepted = the records the broker
confirmed, persisted = the rows the worker stored for the test id. Two cases on one broker and
one stack, each with a topic and a group of its own:

- an honest worker (commits after storing) slower than the load, killed (SIGKILL) under load and
  started again: the lag builds, the drain waits it out to 0, nothing is lost, nothing stored
  twice, and the ledger is exact. One run serves both claims: its slowness builds the lag
  whether or not it is killed, and the kill adds only the records read again after the restart;
- a worker that commits before storing, killed under load: it loses the rest of the batch it was
  storing, its drain times out, and the verdict's lost count is that number exactly, counted here independently (the
  records of the test id in the topic, read back from the broker, less the rows stored).
"""

from __future__ import annotations

import json
import sqlite3
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import polling
import pytest
import requests
from engine_testkit import free_port
from kafka import KafkaConsumer
from kafka_kit import RunningKafka, kafka_process, start_kafka
from own_system_kit import WorkerProcess
from test_harness_kit import EXAMPLES, ElvesRun, loadtest, run_elves

from elves.local.layout import Layout
from elves.local.ports import HOST, Ports
from elves.local.prometheus_config import OWN_SYSTEM_TARGETS

HERE = Path(__file__).resolve().parent
TEST_ID_HEADER = "X-Test-Id"
RATE_PER_SECOND = 30
LOAD_SECONDS = 15
STORED_PER_SECOND = 22  # slower than the load: a lag builds and the drain must wait for it
KILL_AFTER_STORED = 120  # well inside the load (30/s for 15 s): the kill lands under load ...
KILL_WITH_UNSTORED = 5  # ... while the worker holds a batch it has not stored yet
# From `elves run`'s start: its preparation (tens of seconds on a busy machine) and the load.
KILL_DEADLINE_SECONDS = 240
READ_BACK_SECONDS = 10.0


def system_under_test(case: str) -> dict:
    return {
        "apiVersion": "elves.dev/v1alpha1", "kind": "SystemUnderTest", "metadata": {"name": f"orders-{case}"},
        "spec": {
            "workloads": [{"name": "orders-worker"}],  # not managed locally
            "queues": {"kafka": [{"group": group(case), "topic": topic(case)}]},
            "testIdHeader": TEST_ID_HEADER,
            "ledger": {"accepted": {"endpoint": "publishOrder"},
                       "persisted": {"promql": 'sum(orders_stored_total{test_id="$TEST_ID"})'}},
            # Drained = lag 0 and every confirmed record stored: a worker that commits before storing
            # reaches lag 0 with records still in hand, and one that lost records never drains.
            "drained": {"ledgerComplete": True},
        },
    }


def topic(case: str) -> str:
    return f"orders.placed.{case}"


def group(case: str) -> str:
    return f"orders-worker-{case}"


@dataclass
class Brokered:
    kafka: RunningKafka
    publish_url: str
    listing: Path  # the own-system targets file the local Prometheus reads


@pytest.fixture(scope="module")
def brokered(local_stack, tmp_path_factory) -> Iterator[Brokered]:
    local_stack.wait_ready()
    home = tmp_path_factory.mktemp("kafka")
    lag_port = Ports(local_stack.settings.port_offset).kafka_lag  # where the local Prometheus scrapes it
    listing = Layout(local_stack.settings.state_dir).prometheus / OWN_SYSTEM_TARGETS
    kafka = start_kafka(home, lag_port)
    running = next(kafka)
    try:
        with kafka_process("publish", home / "publish.log", "--bootstrap", running.broker.bootstrap,
                           "--header", TEST_ID_HEADER) as publish_url:
            yield Brokered(running, publish_url, listing)
    finally:
        listing.write_text("[]\n")
        kafka.close()


class Worker(WorkerProcess):
    """The worker's process, killed and started again by the test as a crash and a restart."""

    def __init__(self, brokered: Brokered, case: str, mode: str, directory: Path):
        port = free_port()
        super().__init__([sys.executable, str(HERE / "own_system_kafka_worker.py"), brokered.kafka.broker.bootstrap,
                          topic(case), group(case), str(directory / "store.db"), str(port), str(STORED_PER_SECOND),
                          mode], directory / "worker.log")
        self.database = directory / "store.db"
        self.metrics_url = f"http://{HOST}:{port}/metrics"
        self.start()
        brokered.listing.write_text(json.dumps([{"targets": [f"{HOST}:{port}"], "labels": {"job": "orders"}}]))

    def stored(self, test_id: str | None = None) -> set[tuple[int, int]]:
        """The (partition, offset) of every row stored (for one test id)."""
        if not self.database.exists():
            return set()
        with sqlite3.connect(self.database) as store:
            query = "SELECT partition, offset FROM stored" + (" WHERE test_id = ?" if test_id else "")
            return set(store.execute(query, (test_id,) if test_id else ()).fetchall())

    def unstored(self) -> int:
        """The records of the batch in hand that it has not stored yet, as its metrics say."""
        page = requests.get(self.metrics_url, timeout=5).text
        return int(next(line.split()[1] for line in page.splitlines() if line.startswith("orders_batch_unstored ")))


def judge(brokered: Brokered, case: str, mode: str, tmp_path: Path, drain: str) -> tuple[ElvesRun, Worker]:
    """Runs the load with the worker killed (SIGKILL) and started again while it stores a batch."""
    worker = Worker(brokered, case, mode, tmp_path)
    test = loadtest(f"kafka-{case}", {
        "target": {"systemUnderTest": f"orders-{case}"},
        "load": {"script": {"path": str(EXAMPLES / "own-system-kafka" / "orders.js")},
                 "rate": f"{RATE_PER_SECOND}/s", "duration": f"{LOAD_SECONDS}s", "mix": {"publishOrder": 1}},
        "drain": {"timeout": drain},
        "slo": [{"metric": "lost_requests", "op": "==", "value": 0}],
    })
    env = {"KAFKA_PUBLISH_URL": brokered.publish_url, "KAFKA_TOPIC": topic(case)}
    outcome: list[ElvesRun] = []
    run = threading.Thread(target=lambda: outcome.append(
        run_elves(tmp_path, test, system_under_test(case), env=env)))
    run.start()
    try:
        polling.wait_for(lambda: not run.is_alive() or (len(worker.stored()) >= KILL_AFTER_STORED
                                                        and worker.unstored() >= KILL_WITH_UNSTORED),
                         "the worker storing a batch under load", KILL_DEADLINE_SECONDS, interval=0.02,
                         ignore=(requests.RequestException,))
        assert run.is_alive(), "the run ended before the worker could be killed under load"
        worker.crash_and_restart()
        run.join()
    finally:
        run.join()
        worker.stop()
    return outcome[0], worker


def published(brokered: Brokered, case: str, test_id: str) -> set[tuple[int, int]]:
    """The records of the topic that carry the test id, read back from the broker: what it confirmed."""
    reader = KafkaConsumer(topic(case), bootstrap_servers=brokered.kafka.broker.bootstrap,
                           auto_offset_reset="earliest", consumer_timeout_ms=int(READ_BACK_SECONDS * 1000))
    try:
        return {(r.partition, r.offset) for r in reader if dict(r.headers).get(TEST_ID_HEADER) == test_id.encode()}
    finally:
        reader.close()


@dataclass
class Judged:
    run: ElvesRun
    ledger: dict
    queue: dict  # the group's lag on the topic, as the results name the queue
    confirmed: set[tuple[int, int]]  # the records of the run's test id in the topic
    stored: set[tuple[int, int]]  # the rows the worker stored for it


def judged(brokered: Brokered, case: str, mode: str, tmp_path: Path, drain: str = "2m") -> Judged:
    run, worker = judge(brokered, case, mode, tmp_path, drain)
    assert run.report_dir is not None, run.output
    results = run.run_results()
    test_id = run.status["runs"][0]["testId"]
    return Judged(run, results["ledger"], results["queues"][f"{group(case)}:{topic(case)}"],
                  published(brokered, case, test_id), worker.stored(test_id))


def assert_exact(judged: Judged) -> None:
    """Passed: every record the broker confirmed (k6's 200s) stored once, the lag drained to 0."""
    assert judged.run.exit_code == 0 and "Verdict: PASSED" in judged.run.output, judged.run.output
    # 15 s at 30/s: about 450 records, each confirmed by the broker.
    assert judged.ledger["requestsAccepted"] == len(judged.confirmed) > 300, judged.ledger
    assert judged.ledger["requestsPersisted"] == judged.ledger["requestsAccepted"], judged.ledger
    assert judged.ledger["lostRequests"] == 0 and judged.ledger["surplus"] == 0, judged.ledger
    assert judged.stored == judged.confirmed and judged.queue["final"] == 0, judged.queue


def test_an_honest_worker_drains_its_lag_to_zero_and_loses_nothing_when_killed_under_load(brokered, tmp_path):
    honest = judged(brokered, "killed-after", "after", tmp_path)
    # Records stored but not committed when it died are read again after the restart: stored once.
    assert_exact(honest)
    # The worker stores 22/s of the 30/s published (a lag of about 120 without the kill, more
    # with it): the drain waited it out.
    assert honest.queue["max"] >= 50, honest.queue
    assert honest.run.run_results()["drainCompleted"] is True


def test_a_worker_that_commits_before_storing_loses_records_and_the_verdict_counts_them(brokered, tmp_path):
    # Its ledger never completes: the drain waits its (short) timeout, then the verdict reads it.
    lossy = judged(brokered, "killed-before", "before", tmp_path, drain="20s")
    assert lossy.run.exit_code == 1 and "Verdict: FAILED" in lossy.run.output, lossy.run.output
    assert lossy.run.run_results()["drainCompleted"] is False
    lost = lossy.confirmed - lossy.stored  # counted from the broker and the worker's database
    assert lost, "the kill landed between two batches: nothing was lost"
    assert lossy.ledger["requestsAccepted"] == len(lossy.confirmed), lossy.ledger
    assert lossy.ledger["lostRequests"] == len(lost), (lossy.ledger, len(lost))
    assert lossy.run.check("lost_requests")["observed"] == len(lost)
    assert lossy.queue["final"] == 0  # the group committed past what it lost: its lag says drained
