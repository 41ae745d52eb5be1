"""Least power for the local mode's processes, shown on the running stack: the registry's API
answers only callers holding the service key, every replica listens on loopback only and, when
the stack runs as root, as a user of its own, as the infrastructure runs as its packages'
users; the ingestor publishes its results on an AMQP connection of its own, apart from the one
it consumes on. The data plane (elves.data_plane): the registry's database role reads and
writes rows and nothing more, the reset's role only empties the tables, each service's broker
user touches only its own queues, and no broker user may reach a management API."""

from __future__ import annotations

import asyncio
import http.client
import ipaddress
import json
import os
import pwd
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pika
import pytest
import requests
from pika.exceptions import ChannelClosedByBroker
from prerequisites import require
from sut_helpers import Gateway, ledger, unique, wait_jobs_finished, wait_ledger

from elves.constants import DEPLOYMENTS, EXCHANGE, GATEWAY, INGESTOR, QUEUE_INGESTOR_DATA, REGISTRY, TEST_ID_HEADER
from elves.data_plane import BROKER_USERS, DATABASE, REGISTRY_ROLE, RESET
from elves.engine.results.ledger import SERVICE_KEY_HEADER
from elves.local import infra
from elves.local.layout import Layout
from elves.local.os_users import service_user
from elves.local.ports import HOST

HTTP_TIMEOUT_SECONDS = 10
TCP_LISTEN, TCP_ESTABLISHED = "0A", "01"  # socket states in /proc/<pid>/net/tcp


def _address(hex_address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """An address of /proc/net/tcp{,6}: 32-bit words in the host's (little-endian) order."""
    raw = bytes.fromhex(hex_address)
    ordered = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    address = ipaddress.ip_address(ordered)
    return address.ipv4_mapped or address if isinstance(address, ipaddress.IPv6Address) else address


def _sockets(pid: int) -> list[tuple[str, ipaddress.IPv4Address | ipaddress.IPv6Address, int, int]]:
    """The process's own TCP sockets: (state, local address, local port, remote port)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:  # closed since the listing
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            local, remote, state, inode = fields[1], fields[2], fields[3], fields[9]
            if inode in inodes:
                address, port = local.rsplit(":", 1)
                found.append((state, _address(address), int(port, 16), int(remote.rsplit(":", 1)[1], 16)))
    return found


def _replicas(stack) -> list[dict]:
    """The running replicas, once a previous test's scale-down has settled (a terminating
    replica's process may be gone before its /proc is read)."""
    stack.wait_ready()
    replicas = [pod for name in DEPLOYMENTS for pod in stack.pods(name) if pod["pid"] and pod["phase"] == "running"]
    assert replicas, "the stack runs no replica"
    return replicas


def test_the_registry_answers_only_callers_with_the_service_key(local_stack):
    url = f"{local_stack.url('registry')}/api/v1/users"
    without = requests.get(url, timeout=HTTP_TIMEOUT_SECONDS)
    wrong = requests.get(url, headers={SERVICE_KEY_HEADER: "not-the-key"}, timeout=HTTP_TIMEOUT_SECONDS)
    right = requests.get(url, headers={SERVICE_KEY_HEADER: local_stack.service_key()}, timeout=HTTP_TIMEOUT_SECONDS)
    assert (without.status_code, wrong.status_code, right.status_code) == (401, 401, 200)
    assert without.json()["field"] == wrong.json()["field"] == SERVICE_KEY_HEADER, (without.text, wrong.text)


# The key (and the gateway's token, and its admin rule) hold however a path is spelt: these
# spellings of an API path are not /api/ to a raw-path test, but the router may match them
# (decoded, `;` parameters removed) or the web server normalise them (`.`, `..`, `//`).
SPELLINGS = {
    "encoded letters": "/%61pi/v1/{}",
    "all letters encoded": "/%61%70%69/v1/{}",
    "a ; parameter": "/api;/v1/{}",
    "a ; parameter with a value": "/api/v1;x=y/{}",
    "a .. segment": "/x/../api/v1/{}",
    "a . segment": "/./api/v1/{}",
    "a double slash": "//api/v1/{}",
    "an encoded slash": "/api%2Fv1/{}",
    "an encoded slash, lower case": "/api%2fv1/{}",
}
REFUSED = {400, 401, 404}


def _raw(base: str, method: str, path: str, headers: dict[str, str], body: bytes | None = None) -> tuple[int, bytes]:
    """One call with `path` sent as it is (requests and urllib3 decode %61 and drop dot segments)."""
    address = urlsplit(base)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=HTTP_TIMEOUT_SECONDS)
    try:
        connection.request(method, path, body=body, headers=headers)
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


def _registry_replica(stack) -> dict:
    stack.wait_ready()
    return next(pod for pod in stack.pods("registry") if pod["pid"] and pod["phase"] == "running")


def _registry_bases(stack) -> list[str]:
    """The registry behind the local proxy, and one replica straight."""
    return [stack.url("registry"), f"http://{HOST}:{_registry_replica(stack)['httpPort']}"]


def test_no_spelling_of_a_path_reaches_the_registry_without_the_key(local_stack):
    forger, test_id = unique("sut-forger"), unique("test-forged")
    forged = json.dumps({"userId": forger, "endpoint": "getData"}).encode()
    probes = [("GET", "users", None), ("GET", f"ledger?testId={test_id}", None),
              ("GET", f"logs?user={forger}&all=true", None), ("POST", "logs", forged)]
    wrong = []
    for base in _registry_bases(local_stack):
        for what, spelling in SPELLINGS.items():
            for method, rest, body in probes:
                path = spelling.format(rest)
                status, text = _raw(base, method, path, {"Content-Type": "application/json", TEST_ID_HEADER: test_id},
                                    body)
                if status not in REFUSED:
                    wrong.append(f"{method} {base}{path} ({what}) -> {status}: {text[:120]!r}")
    assert wrong == [], wrong

    # Nothing was written: the forged log is in neither the user's history nor the test's ledger.
    keyed = {SERVICE_KEY_HEADER: local_stack.service_key()}
    history = requests.get(f"{local_stack.url('registry')}/api/v1/logs", params={"user": forger, "all": "true"},
                           headers=keyed, timeout=HTTP_TIMEOUT_SECONDS)
    assert history.status_code == 200 and history.json()["items"] == [], history.text
    assert ledger(local_stack, test_id)["logs"] == 0


def test_the_registry_port_is_closed_without_the_key_whatever_the_path_but_management_stays_open(local_stack):
    base = local_stack.url("registry")
    for path in ("/", "/openapi.yaml", "/error", "/actuator/health", "/no-such-path", "/api"):
        status, text = _raw(base, "GET", path, {})
        assert status == 401, f"{path} -> {status}: {text[:200]!r}"
        assert json.loads(text)["field"] == SERVICE_KEY_HEADER, text
    health = requests.get(f"http://{HOST}:{_registry_replica(local_stack)['managementPort']}/actuator/health/readiness",
                          timeout=HTTP_TIMEOUT_SECONDS)
    assert health.status_code == 200, health.text


def test_no_spelling_of_a_path_reaches_the_gateway_without_a_token_or_getallusers_without_admin(local_stack):
    user, test_id = unique("sut-spelling"), unique("test-spelling")
    plain = {"Authorization": f"Bearer {local_stack.token(user)}", TEST_ID_HEADER: test_id}
    wrong = []
    for what, spelling in SPELLINGS.items():
        for headers, rest in (({TEST_ID_HEADER: test_id}, "history"), ({TEST_ID_HEADER: test_id}, "users/me"),
                              ({TEST_ID_HEADER: test_id}, "users"), (plain, "users")):
            path = spelling.format(rest)
            status, text = _raw(local_stack.url("gateway"), "GET", path, headers)
            allowed = REFUSED if "Authorization" not in headers else REFUSED | {403}
            if status not in allowed:
                wrong.append(f"GET {path} ({what}, {'a user' if 'Authorization' in headers else 'no'} token) "
                             f"-> {status}: {text[:120]!r}")
    assert wrong == [], wrong

    # No handler ran: a handler logs every 2xx under the test id. One allowed call after the
    # probes, under the same test id, is the only log once it has arrived.
    gateway = Gateway(local_stack, user, test_id)
    assert gateway.history().status_code == 200
    seen = wait_ledger(local_stack, test_id, lambda entry: entry["logs"] >= 1, 60, "the allowed call's log")
    assert seen["logsByEndpoint"] == {"getHistory": 1}, seen


def test_every_replica_listens_on_loopback_only(local_stack):
    for replica in _replicas(local_stack):
        listening = {(address, port) for state, address, port, _ in _sockets(replica["pid"]) if state == TCP_LISTEN}
        ports = {replica["httpPort"], replica["managementPort"]} - {None}
        assert ports <= {port for _, port in listening}, f"{replica['pod']} listens on {listening}, not {ports}"
        outside = {(str(address), port) for address, port in listening if not address.is_loopback}
        assert not outside, f"{replica['pod']} listens beyond loopback: {outside}"


def _ids(pid: int) -> dict[str, list[str]]:
    status = Path(f"/proc/{pid}/status").read_text()
    return {line.split(":")[0]: line.split()[1:] for line in status.splitlines()
            if line.startswith(("Uid:", "Gid:", "Groups:"))}


def _require_root() -> None:
    # Started by an unprivileged user, everything runs as that user: nothing to prove.
    require(os.geteuid() == 0, "root: the tier runs the stack as root to prove its processes drop to users of their own")


def test_started_as_root_each_service_runs_as_a_user_of_its_own(local_stack):
    _require_root()
    for replica in _replicas(local_stack):
        ids = _ids(replica["pid"])
        # Root's group too is power: it reads whatever root's group may.
        for field, values in ids.items():
            assert "0" not in values, f"{replica['pod']} (pid {replica['pid']}) runs with {field} {values}"
        deployment = replica["pod"].rsplit("-", 1)[0]
        expected = pwd.getpwnam(service_user(deployment)).pw_uid
        assert set(ids["Uid"]) == {str(expected)}, f"{replica['pod']} runs as uid {ids['Uid']}, not {expected}"


def test_started_as_root_the_infrastructure_runs_as_its_packages_users(local_stack):
    _require_root()
    state = local_stack.supervisor.state()
    expected = {"epmd": "rabbitmq", "rabbitmq": "rabbitmq", "postgres": "postgres", "prometheus": "prometheus"}
    pids = {name: component["pid"] for name, component in state["infra"].items()}
    pids["proxy"] = state["proxy"]["pid"]
    expected["proxy"] = "haproxy"
    for name, pid in pids.items():
        ids = _ids(pid)
        assert set(ids["Uid"]) == {str(pwd.getpwnam(expected[name]).pw_uid)}, f"{name} (pid {pid}) runs as {ids}"
        assert "0" not in ids["Gid"] + ids["Groups"], f"{name} (pid {pid}) runs with root's group: {ids}"


def test_a_service_cannot_read_another_services_environment(local_stack):
    _require_root()
    pids = {replica["pod"].rsplit("-", 1)[0]: replica["pid"] for replica in _replicas(local_stack)}
    for reader, target in ((GATEWAY, REGISTRY), (INGESTOR, GATEWAY), (REGISTRY, INGESTOR)):
        entry = pwd.getpwnam(service_user(reader))
        read = subprocess.run(["cat", f"/proc/{pids[target]}/environ"], user=entry.pw_uid, group=entry.pw_gid,
                              extra_groups=[], capture_output=True, timeout=10)
        assert read.returncode != 0 and not read.stdout, f"{reader} read {target}'s environment"
        assert b"Permission denied" in read.stderr, read.stderr


# ---- the data plane -------------------------------------------------------------------------

def _psql(stack, role, sql: str) -> subprocess.CompletedProcess:
    """Runs `sql` as a database role of the system, over TCP with its password."""
    env = {**os.environ, "PGPASSWORD": Layout(stack.settings.state_dir).secret(role.secret())}
    return subprocess.run([str(infra.POSTGRES_BIN / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", HOST,
                           "-p", str(stack.ports.postgres), "-U", role.name, "-d", DATABASE, "-At", "-c", sql],
                          env=env, capture_output=True, text=True, timeout=30)


def test_the_registry_connects_with_a_role_that_owns_nothing(local_stack):
    local_stack.wait_ready()
    code, output = asyncio.run(infra.Postgres("postgres", Layout(local_stack.settings.state_dir), local_stack.ports)
                               .psql(f"SELECT DISTINCT usename FROM pg_stat_activity WHERE datname = '{DATABASE}';\n"))
    assert code == 0, output
    assert REGISTRY_ROLE.name in output.split(), f"the registry's connections are not its role's: {output}"
    assert "postgres" not in output.split(), output


def _assert_refused(stack, role, refused: dict[str, str]) -> None:
    """Each statement, run as `role`, fails with its reason."""
    for sql, why in refused.items():
        answer = _psql(stack, role, sql)
        assert answer.returncode != 0 and why in answer.stderr, f"{sql}: {answer.returncode} {answer.stderr}"


def test_the_registrys_role_reads_and_writes_rows_and_nothing_more(local_stack):
    assert _psql(local_stack, REGISTRY_ROLE, "SELECT count(*) FROM users").returncode == 0
    refused = {
        "DROP TABLE users": "must be owner",
        "ALTER TABLE users ADD COLUMN evil text": "must be owner",
        "TRUNCATE users": "permission denied",
        "CREATE TABLE evil (id int)": "permission denied for schema public",
        "SELECT * FROM flyway_schema_history": "permission denied",
        "SELECT rolpassword FROM pg_authid": "permission denied",
    }
    _assert_refused(local_stack, REGISTRY_ROLE, refused)


def test_the_reset_role_may_empty_the_tables_but_not_read_them(local_stack):
    refused = {
        "SELECT count(*) FROM activity_logs": "permission denied",
        "DELETE FROM users": "permission denied",
        "TRUNCATE flyway_schema_history": "permission denied",
        "DROP TABLE users": "must be owner",
    }
    _assert_refused(local_stack, RESET, refused)
    # The privilege it has, without using it (emptying the tables is test_stack_reset's).
    granted = _psql(local_stack, RESET, "SELECT count(*) FROM information_schema.table_privileges "
                                        f"WHERE grantee = '{RESET.name}' AND privilege_type <> 'TRUNCATE'")
    assert granted.returncode == 0 and granted.stdout.strip() == "0", granted


def _channel(stack, service: str):
    user = BROKER_USERS[service]
    credentials = pika.PlainCredentials(user.name, Layout(stack.settings.state_dir).secret(user.secret()))
    connection = pika.BlockingConnection(pika.ConnectionParameters(
        host=HOST, port=stack.ports.amqp, credentials=credentials, connection_attempts=3, retry_delay=1,
        socket_timeout=10))
    return connection, connection.channel()


def _refused(stack, service: str, attempt) -> str:
    """What the broker answers `attempt(channel)` for the service's user: its refusal."""
    connection, channel = _channel(stack, service)
    try:
        with pytest.raises(ChannelClosedByBroker) as closed:
            attempt(channel)
        return f"{closed.value.reply_code} {closed.value.reply_text}"
    finally:
        if connection.is_open:
            connection.close()


def test_the_gateways_broker_user_cannot_consume_a_queue_or_declare_an_exchange(local_stack):
    local_stack.wait_ready()
    consume = _refused(local_stack, GATEWAY, lambda channel: channel.basic_get(QUEUE_INGESTOR_DATA, auto_ack=False))
    assert consume.startswith("403 ACCESS_REFUSED") and QUEUE_INGESTOR_DATA in consume, consume
    declare = _refused(local_stack, GATEWAY, lambda channel: channel.exchange_declare("elves.evil", "fanout"))
    assert declare.startswith("403 ACCESS_REFUSED") and "elves.evil" in declare, declare
    # It still publishes, which is all it needs.
    connection, channel = _channel(local_stack, GATEWAY)
    try:
        channel.exchange_declare(EXCHANGE, "direct", passive=True)
    finally:
        connection.close()


def test_the_registrys_broker_user_cannot_consume_the_ingestors_queue(local_stack):
    refused = _refused(local_stack, REGISTRY, lambda channel: channel.basic_get(QUEUE_INGESTOR_DATA, auto_ack=False))
    assert refused.startswith("403 ACCESS_REFUSED"), refused


def test_no_broker_user_is_tagged_and_no_management_api_listens(local_stack):
    rabbitmq = infra.RabbitMQ("rabbitmq", Layout(local_stack.settings.state_dir), local_stack.ports)
    code, output = asyncio.run(rabbitmq.ctl("list_users", "--formatter", "json"))
    assert code == 0, output
    users = {user["user"]: user["tags"] for user in json.loads(output)}
    assert set(users) == {user.name for user in BROKER_USERS.values()}, users
    assert all(tags == [] for tags in users.values()), users
    code, output = asyncio.run(rabbitmq.ctl("status", "--formatter", "json"))
    assert code == 0, output
    protocols = {listener["protocol"] for listener in json.loads(output)["listeners"]}
    assert protocols == {"amqp", "clustering", "http/prometheus"}, protocols


def test_the_ingestor_publishes_on_a_connection_apart_from_the_one_it_consumes_on(local_stack):
    # Spring opens the publisher connection at the first publish: a plot makes one.
    gateway = Gateway(local_stack, unique("conn"), unique("test-conn"))
    gateway.request_plot()
    wait_jobs_finished(local_stack, gateway.test_id, 1)
    amqp = local_stack.ports.amqp

    def per_replica() -> dict[str, int] | None:
        counts = {replica["pod"]: sum(1 for state, _, _, remote in _sockets(replica["pid"])
                                      if state == TCP_ESTABLISHED and remote == amqp)
                  for replica in local_stack.pods("ingestor") if replica["pid"]}
        return counts if max(counts.values(), default=0) >= 2 else None

    counts = local_stack.wait_for(per_replica, "an ingestor that published to hold two AMQP connections", 30)
    # One to consume on, one to publish on; never more (the listener's consumers share theirs).
    assert set(counts.values()) <= {1, 2}, counts
