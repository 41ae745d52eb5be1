"""Least power for the local mode's processes, shown on the running stack (issue 11: 3, 4, 12):
the registry's API answers only callers holding the service key, every replica listens on
loopback only and, when the stack runs as root, as an unprivileged user; the ingestor
publishes its results on an AMQP connection of its own, apart from the one it consumes on."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

import requests
from prerequisites import require
from sut_helpers import Gateway, unique, wait_jobs_finished

from elves.constants import DEPLOYMENTS
from elves.engine.ledger import SERVICE_KEY_HEADER

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


def test_every_replica_listens_on_loopback_only(local_stack):
    for replica in _replicas(local_stack):
        listening = {(address, port) for state, address, port, _ in _sockets(replica["pid"]) if state == TCP_LISTEN}
        ports = {replica["httpPort"], replica["managementPort"]} - {None}
        assert ports <= {port for _, port in listening}, f"{replica['pod']} listens on {listening}, not {ports}"
        outside = {(str(address), port) for address, port in listening if not address.is_loopback}
        assert not outside, f"{replica['pod']} listens beyond loopback: {outside}"


def test_started_as_root_the_replicas_run_as_an_unprivileged_user(local_stack):
    # Started by an unprivileged user, the replicas are that user: nothing to prove.
    require(os.geteuid() == 0, "root: the tier runs the stack as root to prove its replicas drop to another user")
    for replica in _replicas(local_stack):
        status = Path(f"/proc/{replica['pid']}/status").read_text()
        ids = {line.split(":")[0]: line.split()[1:] for line in status.splitlines()
               if line.startswith(("Uid:", "Gid:", "Groups:"))}
        # Root's group too is power: it reads whatever root's group may.
        for field, values in ids.items():
            assert "0" not in values, f"{replica['pod']} (pid {replica['pid']}) runs with {field} {values}"


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
