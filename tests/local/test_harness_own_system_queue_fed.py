"""A RabbitMQ-fed worker that is not Elves, judged in the local mode (tests/local/
own_system_queue_worker.py): `elves run` publishes the example's load into its exchange through an
unmodified k6 and Elves' publisher (elves.rabbitmq.publish, publisher confirms), waits for its
queue to empty and its ledger to complete, and judges it. One run, each assertion read from it:
the worker is slower than the load, so the queue fills and drains; it is killed (SIGKILL) under
load and started again; it acknowledges after storing, so nothing is lost and nothing stored
twice. Accepted = the messages the broker confirmed (k6's 200s); stored is counted here
independently, in the worker's own database.

Least power, as a team would run it: the publisher's user may only write to the exchange, the
worker's only read its queue; their passwords are files readable by this user only.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import sqlite3
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pika
import polling
import pytest
import requests
from door_kit import door_process
from engine_testkit import free_port
from own_system_kit import WorkerProcess
from sut_helpers import private_vhost_and_database
from test_harness_kit import EXAMPLES, ElvesRun, loadtest, run_elves

from elves.data_plane import BROKER_USERS, HARNESS
from elves.local import infra
from elves.local.layout import Layout
from elves.local.ports import HOST
from elves.local.processes import run_command
from elves.local.prometheus_config import OWN_SYSTEM_TARGETS

HERE = Path(__file__).resolve().parent
VHOST = "orders-queue-fed"
EXCHANGE, ROUTING_KEY, QUEUE = "orders", "placed", "orders.placed"
TEST_ID_HEADER = "X-Test-Id"
RATE_PER_SECOND = 30
LOAD_SECONDS = 12
STORED_PER_SECOND = 22  # slower than the load: the queue fills and the drain must wait for it
KILL_AFTER_STORED = 100  # well inside the load (30/s for 12 s): the kill lands under load
# From `elves run`'s start: its preparation (tens of seconds on a busy machine) and the load.
KILL_DEADLINE_SECONDS = 240
CTL_TIMEOUT_SECONDS = 60.0
# (name, configure, write, read): the publisher writes to the exchange only, the worker reads its queue only.
USERS = {"publisher": ("orders-publisher", "^$", f"^{EXCHANGE}$", "^$"),
         "worker": ("orders-worker", "^$", "^$", f"^{QUEUE.replace('.', '[.]')}$")}

SYSTEM = {
    "apiVersion": "elves.dev/v1alpha1", "kind": "SystemUnderTest", "metadata": {"name": "orders-rabbitmq"},
    "spec": {
        "workloads": [{"name": "orders-worker"}],  # not managed locally
        "queues": {"rabbitmq": [QUEUE]},
        "testIdHeader": TEST_ID_HEADER,
        "ledger": {"accepted": {"endpoint": "publishOrder"},
                   "persisted": {"promql": 'sum(orders_stored_total{test_id="$TEST_ID"})'}},
        "drained": {"ledgerComplete": True},
    },
}


def _ctl(rabbitmq: infra.RabbitMQ, *args: str, stdin: str | None = None) -> None:
    # The password goes on standard input, never on a command line others can read.
    argv = [str(infra.RABBITMQ_BIN / "rabbitmqctl"), "-n", infra.RABBITMQ_NODE, *args]
    code, output = asyncio.run(run_command(argv, CTL_TIMEOUT_SECONDS, env=rabbitmq.env(), user=rabbitmq.os_user,
                                           stdin=stdin))
    assert code == 0, f"rabbitmqctl {' '.join(args)} failed: {output}"


@contextmanager
def least_power_users(rabbitmq: infra.RabbitMQ, directory: Path) -> Iterator[dict[str, Path]]:
    """The publisher's and the worker's users, each allowed only its part; their password files."""
    files = {}
    try:
        for role, (name, configure, write, read) in USERS.items():
            files[role] = directory / f"{role}-password"
            with open(os.open(files[role], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as out:
                out.write(secrets.token_urlsafe(24))
            _ctl(rabbitmq, "add_user", name, stdin=files[role].read_text())
            _ctl(rabbitmq, "set_permissions", "-p", VHOST, name, configure, write, read)
        yield files
    finally:
        for role in files:
            _ctl(rabbitmq, "delete_user", USERS[role][0])


def declare_topology(stack, layout: Layout) -> None:
    """The team's exchange, its quorum queue and the binding, declared by the harness's user
    (all permissions in the private vhost): neither the publisher nor the worker may."""
    harness = BROKER_USERS[HARNESS]
    credentials = pika.PlainCredentials(harness.name, layout.secret(harness.secret()))
    with pika.BlockingConnection(pika.ConnectionParameters(host=HOST, port=stack.ports.amqp, virtual_host=VHOST,
                                                           credentials=credentials)) as connection:
        channel = connection.channel()
        channel.exchange_declare(EXCHANGE, "direct", durable=True)
        channel.queue_declare(QUEUE, durable=True, arguments={"x-queue-type": "quorum"})
        channel.queue_bind(QUEUE, EXCHANGE, ROUTING_KEY)


class Worker(WorkerProcess):
    """The worker's process, killed and started again by the test as a crash and a restart."""

    def __init__(self, stack, password_file: Path, directory: Path):
        self.port = free_port()
        self.database = directory / "store.db"
        super().__init__([sys.executable, str(HERE / "own_system_queue_worker.py"), str(stack.ports.amqp), VHOST,
                          USERS["worker"][0], str(password_file), QUEUE, str(self.database), str(self.port),
                          str(STORED_PER_SECOND)], directory / "worker.log")
        self.start()

    def stored(self, test_id: str | None = None) -> int:
        """Rows stored (for one test id), read from its database: a count the harness does not see."""
        if not self.database.exists():
            return 0
        with sqlite3.connect(self.database) as store:
            query = "SELECT count(*) FROM stored" + (" WHERE test_id = ?" if test_id else "")
            return store.execute(query, (test_id,) if test_id else ()).fetchone()[0]

    def redelivered(self) -> int:
        """Messages the broker delivered again after the kill: those the killed one held unacknowledged."""
        with sqlite3.connect(self.database) as store:
            return store.execute("SELECT count(*) FROM redelivered").fetchone()[0]


def run_with_a_kill(tmp_path: Path, worker: Worker, publish_url: str) -> ElvesRun:
    test = loadtest("orders-queue-fed", {
        "target": {"systemUnderTest": "orders-rabbitmq"},
        "load": {"script": {"path": str(EXAMPLES / "own-system-rabbitmq" / "orders.js")},
                 "rate": f"{RATE_PER_SECOND}/s", "duration": f"{LOAD_SECONDS}s", "mix": {"publishOrder": 1}},
        "drain": {"timeout": "2m"},
        "slo": [{"metric": "lost_requests", "op": "==", "value": 0}, {"metric": "duplicates", "op": "==", "value": 0},
                {"metric": "http_req_failed_rate", "op": "==", "value": 0}],
    })
    env = {"RABBITMQ_PUBLISH_URL": publish_url, "RABBITMQ_EXCHANGE": EXCHANGE, "RABBITMQ_ROUTING_KEY": ROUTING_KEY}
    outcome: list[ElvesRun] = []
    run = threading.Thread(target=lambda: outcome.append(run_elves(tmp_path, test, SYSTEM, env=env)))
    run.start()
    try:
        polling.wait_for(lambda: not run.is_alive() or worker.stored() >= KILL_AFTER_STORED,
                         "the worker storing under load", KILL_DEADLINE_SECONDS, interval=0.05)
        assert run.is_alive(), "the run ended before the worker could be killed under load"
        worker.crash_and_restart()
    finally:
        run.join()
    return outcome[0]


@dataclass
class Team:
    """The team's side, ready for a run: its users and topology in a vhost of its own, Elves'
    publisher in front of the broker as the publisher's user."""

    stack: object
    directory: Path
    passwords: dict[str, Path]
    publish_url: str


@pytest.fixture(scope="module")
def team(local_stack, tmp_path_factory) -> Iterator[Team]:
    local_stack.wait_ready()
    directory = tmp_path_factory.mktemp("queue-fed")
    layout = Layout(local_stack.settings.state_dir)
    rabbitmq = infra.RabbitMQ("rabbitmq", layout, local_stack.ports)
    with private_vhost_and_database(local_stack, VHOST), least_power_users(rabbitmq, directory) as passwords:
        declare_topology(local_stack, layout)
        team = Team(local_stack, directory, passwords, "")
        with publisher(team, "publish.log") as team.publish_url:
            yield team


def publisher(team: Team, log: str, *args: str):
    """Elves' publisher as the publisher's user, in front of the team's vhost; yields its URL."""
    return door_process("elves.rabbitmq.publish", team.directory / log, "--amqp", f"{HOST}:{team.stack.ports.amqp}",
                        "--vhost", VHOST, "--user", USERS["publisher"][0], "--password-file",
                        str(team.passwords["publisher"]), "--header", TEST_ID_HEADER, *args)


@dataclass
class Judged:
    run: ElvesRun
    results: dict
    stored: int  # the worker's rows of the run's test id
    redelivered: int


@pytest.fixture(scope="module")
def judged(team: Team) -> Judged:
    listing = Layout(team.stack.settings.state_dir).prometheus / OWN_SYSTEM_TARGETS
    worker = Worker(team.stack, team.passwords["worker"], team.directory)
    try:
        listing.write_text(json.dumps([{"targets": [f"{HOST}:{worker.port}"],
                                        "labels": {"job": "orders", "workload": "orders-worker"}}]))
        run = run_with_a_kill(team.directory, worker, team.publish_url)
    finally:
        listing.write_text("[]\n")
        worker.stop()
    assert run.report_dir is not None, run.output
    test_id = run.status["runs"][0]["testId"]
    return Judged(run, run.run_results(), worker.stored(test_id), worker.redelivered())


def publish(url: str, path: str) -> requests.Response:
    return requests.post(f"{url}{path}", data="{}", headers={TEST_ID_HEADER: "shop/t/0"}, timeout=30)


def test_the_publisher_refuses_what_the_broker_would_not_deliver_naming_why(team):

    # Bound to no queue: confirmed by the broker but delivered nowhere, so not accepted.
    unroutable = publish(team.publish_url, f"/exchanges/{EXCHANGE}/nowhere")
    assert unroutable.status_code == 400 and "routed it to no queue" in unroutable.json()["error"], unroutable.text
    # Its user may write to the exchange only: not straight into the queue (the default exchange).
    refused = publish(team.publish_url, f"/queues/{QUEUE}")
    assert refused.status_code == 400 and "ACCESS_REFUSED" in refused.json()["error"], refused.text


def test_an_idle_publisher_keeps_its_connections(team):
    # The broker closes a connection that misses two heartbeats; a pooled channel idle between
    # two loads (or a stage's low rate) must still publish, not answer 503. Idle is the point
    # here: four heartbeats of a 1 s heartbeat, then the same channel again.
    with publisher(team, "publish-idle.log", "--heartbeat", "1", "--channels", "1") as url:
        assert publish(url, f"/exchanges/{EXCHANGE}/nowhere").status_code == 400  # the broker answered: routed nowhere
        time.sleep(4)
        again = publish(url, f"/exchanges/{EXCHANGE}/nowhere")
        assert again.status_code == 400, again.text


def test_the_planned_rate_is_published_and_every_message_confirmed(judged):
    assert judged.run.exit_code == 0 and "Verdict: PASSED" in judged.run.output, judged.run.output
    # 12 s at 30/s: 360 messages planned; each answered 200 only once the broker confirmed it routed.
    planned = RATE_PER_SECOND * LOAD_SECONDS
    assert planned * 0.95 <= judged.results["ledger"]["requestsAccepted"] <= planned + 1, judged.results["ledger"]
    assert judged.run.check("http_req_failed_rate")["observed"] == 0


def test_the_drain_waits_for_the_queue_to_empty(judged):
    # The worker stores 22/s of the 30/s published (and none while it restarts): a backlog it drains.
    queue = judged.results["queues"][QUEUE]
    assert queue["max"] >= 50 and queue["final"] == 0, queue
    assert judged.results["drainCompleted"] is True and judged.results["drainSeconds"] >= 3, judged.results


def test_a_worker_killed_under_load_that_acks_after_storing_loses_nothing(judged):
    ledger = judged.results["ledger"]
    # What it held unacknowledged when killed came back to the restarted one ...
    assert judged.redelivered > 0, "the kill found no message in hand"
    # ... and every confirmed message is stored exactly once, as the worker's own database says.
    assert ledger["requestsAccepted"] == ledger["requestsPersisted"] == judged.stored, (ledger, judged.stored)
    assert ledger["lostRequests"] == 0 and ledger["surplus"] == 0, ledger
