"""What the system-under-test tests (tests/local/test_sut_*.py) share.

- `Gateway`: one user's calls under one test id, counting the 2xx answers per endpoint,
  since every 2xx answer has exactly one activity log (docs/architecture.md, "Services").
- `ledger` / `wait_ledger`: the registry's per-test counts, polled with a deadline.
- `Broker`: publishes raw messages to the local RabbitMQ and reads queue depths, for the
  tests that must act below the gateway (duplicates, poison messages).
- `private_vhost_and_database`: an empty RabbitMQ vhost and PostgreSQL database on the stack's
  servers, for services the tests start themselves (nothing of the system's sees them).
- `Relay`: a loopback port that refuses connections until opened, then forwards them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pika
import requests

from elves.constants import EXCHANGE, TEST_ID_HEADER
from elves.data_plane import BROKER_USERS, HARNESS, MIGRATOR
from elves.engine.results.ledger import SERVICE_KEY_HEADER, read_ledger
from elves.local import infra
from elves.local.layout import Layout
from elves.local.ports import HOST

# A client waits this long for any answer; a test asserts that no call ever needs it.
HTTP_TIMEOUT_SECONDS = 10.0
# One plot request as the gateway expects it (services/README.md).
DATA_BODY = {"radar": "KTLX", "date": "2024-05-20", "start": "10:00", "end": "11:30"}
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# How long the ingestor may take for a batch of jobs: one replica does a few per second
# at the default cost on this 2-core machine, slower while other work shares the cores.
SECONDS_PER_JOB = 1.0
MIN_JOB_WAIT_SECONDS = 90.0
# A JVM start on a busy 2-core machine, plus the supervisor's back-off.
RESTART_SECONDS = 240.0


def unique(prefix: str) -> str:
    """A name no earlier run has used: test ids and users, so every count starts at zero."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def envelope(kind: str, user: str, test_id: str, data: dict, message_id: str | None = None) -> bytes:
    """A message as the services write it (docs/architecture.md, "Messages")."""
    return json.dumps({
        "id": message_id or str(uuid.uuid4()), "type": kind, "time": datetime.now(timezone.utc).isoformat(),
        "userId": user, "testId": test_id, "data": data,
    }).encode()


def job_deadline(jobs: int) -> float:
    return max(MIN_JOB_WAIT_SECONDS, jobs * SECONDS_PER_JOB)


class Gateway:
    """One user's calls to the gateway under one test id (thread-safe)."""

    def __init__(self, stack: Any, user: str, test_id: str | None, admin: bool = False) -> None:
        self.base = stack.url("gateway")
        self.user = user
        self.test_id = test_id
        self.headers = {"Authorization": f"Bearer {stack.token(user, admin=admin)}"}
        if test_id is not None:
            self.headers[TEST_ID_HEADER] = test_id
        # 2xx answers per endpoint name: what the registry must have logged for this test id.
        self.logged: Counter[str] = Counter()
        self._lock = threading.Lock()

    def call(self, endpoint: str, method: str, path: str, **kwargs: Any) -> requests.Response:
        answer = requests.request(method, self.base + path, headers={**self.headers, **kwargs.pop("headers", {})},
                                  timeout=HTTP_TIMEOUT_SECONDS, **kwargs)
        if 200 <= answer.status_code < 300:
            with self._lock:
                self.logged[endpoint] += 1
        return answer

    def get_data(self, body: Any = DATA_BODY) -> requests.Response:
        return self.call("getData", "POST", "/api/v1/data", json=body)

    def request_plot(self, body: Any = DATA_BODY) -> str:
        """getData that must be accepted; the request id."""
        answer = self.get_data(body)
        assert answer.status_code == 202, f"getData answered {answer.status_code}: {answer.text}"
        return answer.json()["id"]

    def status(self, request_id: str) -> requests.Response:
        return self.call("getStatus", "GET", f"/api/v1/status/{request_id}")

    def plot(self, request_id: str) -> requests.Response:
        return self.call("getImage", "GET", f"/api/v1/plots/{request_id}")

    def history(self, **params: Any) -> requests.Response:
        endpoint = "getAllHistory" if params.get("all") else "getHistory"
        return self.call(endpoint, "GET", "/api/v1/history", params=params)

    def me(self) -> requests.Response:
        return self.call("getUser", "GET", "/api/v1/users/me")


def ledger(stack: Any, test_id: str) -> dict[str, Any]:
    return read_ledger(stack.url("registry"), test_id, stack.service_key(), HTTP_TIMEOUT_SECONDS)


def statuses(stack: Any, request_ids: list[str]) -> Counter[str]:
    """How many of `request_ids` the registry has in each status, read from the registry
    itself: unlike getStatus on the gateway, this leaves no activity log behind."""
    found: Counter[str] = Counter()
    for request_id in request_ids:
        answer = requests.get(f"{stack.url('registry')}/api/v1/requests/{request_id}",
                              headers={SERVICE_KEY_HEADER: stack.service_key()}, timeout=HTTP_TIMEOUT_SECONDS)
        found[answer.json()["status"] if answer.status_code == 200 else f"HTTP {answer.status_code}"] += 1
    return found


def wait_ledger(stack: Any, test_id: str, condition: Callable[[dict[str, Any]], bool],
                seconds: float, what: str) -> dict[str, Any]:
    """Polls the ledger of `test_id` until `condition` holds; a registry that cannot answer for
    a moment (a replica restarting) is "not yet". Fails with the last ledger seen and the
    registry's replicas, so that a failure says whether one restarted."""
    seen: list[dict[str, Any]] = [{}]

    def check() -> dict[str, Any] | None:
        seen[0] = ledger(stack, test_id)
        return seen[0] if condition(seen[0]) else None

    try:
        return stack.wait_for(check, what, seconds)
    except AssertionError as error:
        raise AssertionError(f"{error}; last ledger: {seen[0]}; registry replicas: "
                             f"{[(p['pod'], p['phase'], p['restarts']) for p in stack.pods('registry')]}") from None


def finished(entry: dict[str, Any]) -> int:
    return entry["results"]["done"] + entry["results"]["failed"]


def wait_jobs_finished(stack: Any, test_id: str, jobs: int) -> dict[str, Any]:
    """Waits until `jobs` requests of `test_id` have a terminal result (DONE or FAILED)."""
    return wait_ledger(stack, test_id, lambda entry: finished(entry) >= jobs, job_deadline(jobs),
                       f"{jobs} results of test {test_id}")


def kill_every_replica(stack: Any, deployment: str) -> dict[str, int]:
    """SIGKILL through the supervisor; the pods and the pids they had."""
    killed = {}
    for pod in stack.pods(deployment):
        if pod["pid"]:
            killed[pod["pod"]] = stack.supervisor.kill(deployment, pod["pod"])["pid"]
    assert killed, f"no running {deployment} to kill"
    return killed


def wait_restarted(stack: Any, deployment: str, killed: dict[str, int]) -> None:
    def back() -> bool:
        pods = {pod["pod"]: pod for pod in stack.pods(deployment)}
        return all(pods.get(name, {}).get("ready") and pods[name]["pid"] != pid for name, pid in killed.items())

    stack.wait_for(back, f"{', '.join(killed)} to be restarted and ready", RESTART_SECONDS)


def scratch_leftovers(stack: Any, pods: set[str]) -> dict[str, list[str]]:
    """What is left in each ingestor replica's scratch directory, `<state dir>/scratch/<pod>`
    (docs/architecture.md), for the pods that have anything left."""
    root = Path(stack.supervisor.state()["supervisor"]["stateDir"]) / "scratch"
    left = {pod: sorted(p.name for p in (root / pod).iterdir()) for pod in pods if (root / pod).exists()}
    return {pod: names for pod, names in left.items() if names}


def wait_scratch_empty(stack: Any, pods: set[str]) -> None:
    # A running job's directory goes away when the job ends; a leftover never does.
    stack.wait_for(lambda: not scratch_leftovers(stack, pods), f"empty scratch directories of {sorted(pods)}", 60)


class Broker:
    """A publisher-confirm channel on the local RabbitMQ, as a user of the system (by default
    the harness's own: publishes and inspects, declares nothing)."""

    def __init__(self, stack: Any, user: str = HARNESS) -> None:
        broker_user = BROKER_USERS[user]
        password = Layout(stack.settings.state_dir).secret(broker_user.secret())
        parameters = pika.ConnectionParameters(
            host=HOST, port=stack.ports.amqp, credentials=pika.PlainCredentials(broker_user.name, password),
            connection_attempts=3, retry_delay=1, socket_timeout=10, blocked_connection_timeout=30)
        self.connection = pika.BlockingConnection(parameters)
        self.channel = self.connection.channel()
        self.channel.confirm_delivery()

    def __enter__(self) -> "Broker":
        return self

    def __exit__(self, *_: Any) -> None:
        if self.connection.is_open:
            self.connection.close()

    def publish(self, routing_key: str, body: bytes, message_id: str | None = None,
                exchange: str = EXCHANGE) -> None:
        """Publishes one persistent message; raises unless the broker confirms it was routed."""
        properties = pika.BasicProperties(content_type="application/json", delivery_mode=2, message_id=message_id)
        self.channel.basic_publish(exchange, routing_key, body, properties, mandatory=True)

    def depth(self, queue: str) -> int:
        """Messages ready in `queue` (a passive declare: the broker's count, no scrape lag)."""
        return self.channel.queue_declare(queue, passive=True).method.message_count

    def consumers(self, queue: str) -> int:
        return self.channel.queue_declare(queue, passive=True).method.consumer_count

    def park(self, queue: str, bodies: set[bytes]) -> int:
        """Moves the messages of `queue` whose body is among `bodies` to its dead-letter queue
        (a reject without requeue); the others go back when the channel closes. How many moved."""
        parked = 0
        for _ in range(self.depth(queue)):
            method, _, body = self.channel.basic_get(queue, auto_ack=False)
            if method is None:
                break
            if body in bodies:
                self.channel.basic_reject(method.delivery_tag, requeue=False)
                parked += 1
        self.connection.close()
        return parked


@contextlib.contextmanager
def private_vhost_and_database(stack: Any, name: str) -> Iterator[tuple[str, str]]:
    """An empty vhost and database called `name`, removed after: the services' broker users
    have their own permissions there and the harness's all of them; the migration role owns
    the database.

    Removed, not only left empty: the engine sums queue depths over vhosts, so a leftover
    queue would count in a LoadTest's figures."""
    layout = Layout(stack.settings.state_dir)
    rabbitmq = infra.RabbitMQ("rabbitmq", layout, stack.ports)
    postgres = infra.Postgres("postgres", layout, stack.ports)
    database = name.replace("-", "_")

    async def remove() -> None:
        await rabbitmq.ctl("delete_vhost", name)  # fails harmlessly when absent
        code, output = await postgres.psql(f"DROP DATABASE IF EXISTS {database} WITH (FORCE);\n")
        assert code == 0, f"dropping database {database} failed: {output}"

    async def provision() -> None:
        await remove()
        # The services' users with their own permissions, as in the system's vhost; the harness's
        # (the services' integration tests) with all of them.
        grants = [(user.name, user.configure, user.write, user.read) for key, user in BROKER_USERS.items()
                  if key != HARNESS] + [(BROKER_USERS[HARNESS].name, ".*", ".*", ".*")]
        for args in (("add_vhost", name), *(("set_permissions", "-p", name, *grant) for grant in grants)):
            code, output = await rabbitmq.ctl(*args)
            assert code == 0, f"rabbitmqctl {' '.join(args)} failed: {output}"
        code, output = await postgres.psql(f"CREATE DATABASE {database} OWNER {MIGRATOR.name};\n")
        assert code == 0, f"creating database {database} failed: {output}"

    asyncio.run(provision())
    try:
        yield name, database
    finally:
        asyncio.run(remove())


class Relay:
    """A loopback port in front of `target_port`: refuses connections until `open()`, then
    forwards each one. Bound from the start, so the port cannot be taken meanwhile (a bound
    socket that does not listen answers a connection with a reset, as a stopped server does)."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.server = socket.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind((HOST, 0))
        self.port = self.server.getsockname()[1]
        self.closed = threading.Event()
        self.connections: list[socket.socket] = []

    def open(self) -> None:
        self.server.listen(16)
        threading.Thread(target=self._accept, name=f"relay-{self.port}", daemon=True).start()

    def close(self) -> None:
        self.closed.set()
        for connection in [self.server, *self.connections]:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
            connection.close()

    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                client, _ = self.server.accept()
            except OSError:
                return  # closed
            try:
                upstream = socket.create_connection((HOST, self.target_port), timeout=5)
            except OSError:
                client.close()  # the target refused: the client sees its connection drop
                continue
            upstream.settimeout(None)
            self.connections += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


TRICKLE_PER_SECOND = 5
TRICKLE_LIMIT_SECONDS = 240  # an infrastructure stop + down time + start on a busy machine


class Trickle(threading.Thread):
    """getData at a steady rate, one at a time, recording every answer (or client error)."""

    def __init__(self, gateway: Gateway, per_second: float = TRICKLE_PER_SECOND,
                 limit_seconds: float = TRICKLE_LIMIT_SECONDS) -> None:
        super().__init__(name="getData trickle", daemon=True)
        self.gateway = gateway
        self.per_second = per_second
        self.limit_seconds = limit_seconds
        self.answers: list[tuple[int | str, str | None]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        deadline = time.monotonic() + self.limit_seconds
        while not self.stop.is_set() and time.monotonic() < deadline:
            started = time.monotonic()
            try:
                answer = self.gateway.get_data()
                request_id = answer.json().get("id") if answer.status_code == 202 else None
                self.answers.append((answer.status_code, request_id))
            except requests.RequestException as error:
                self.answers.append((type(error).__name__, None))
            self.stop.wait(max(0.0, 1 / self.per_second - (time.monotonic() - started)))

    def codes(self) -> list[int | str]:
        return [code for code, _ in self.answers]
