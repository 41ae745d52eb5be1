"""The kernel's DNAT rules on this machine's real nat table and connection tracking (as root,
with iptables and conntrack): a replica that is gone leaves no tracking entry behind that
could send a new connection to it."""

from __future__ import annotations

import socket
import subprocess
from contextlib import ExitStack

import pytest
from engine_testkit import free_port
from prerequisites import require

from elves.local.kernel_nat import CONNTRACK, KernelNat


@pytest.fixture(autouse=True)
def root_with_iptables_and_conntrack():
    require(KernelNat.possible() and CONNTRACK.exists(),
            "root, iptables and conntrack (run the tier as root; tools/install-local-deps.sh installs the tools)")


def listener(stack: ExitStack) -> tuple[socket.socket, int]:
    server = stack.enter_context(socket.socket())
    server.bind(("127.0.0.1", 0))
    server.listen()
    return server, server.getsockname()[1]


def tracked(service_port: int) -> dict[int, int]:
    """The tracking entries of connections to `service_port`: client port -> replica port."""
    listing = subprocess.run([str(CONNTRACK), "-L", "-p", "tcp", "--orig-port-dst", str(service_port)],
                             capture_output=True, text=True, check=False).stdout
    entries = {}
    for line in listing.splitlines():
        ports = [int(field.split("=")[1]) for field in line.split() if field.startswith("sport=")]
        if len(ports) == 2:  # the original direction's client port, the reply's replica port
            entries[ports[0]] = ports[1]
    return entries


def connect_through(service_port: int, server: socket.socket, stack: ExitStack) -> int:
    """A connection to the service port, accepted by `server`; returns its client port."""
    client = stack.enter_context(socket.create_connection(("127.0.0.1", service_port), timeout=5))
    stack.enter_context(server.accept()[0])
    return client.getsockname()[1]


def test_a_replica_that_is_gone_leaves_no_tracking_entry_and_a_new_nat_none_of_an_earlier_one():
    service = free_port()
    nat = KernelNat({"svc": service})
    with ExitStack() as stack:
        assert nat.install()
        stack.callback(nat.remove)
        first, first_port = listener(stack)
        second, second_port = listener(stack)
        nat.update({"svc": [(0, first_port)]})
        to_first = connect_through(service, first, stack)
        nat.update({"svc": [(1, second_port)]})
        to_second = connect_through(service, second, stack)
        assert tracked(service) == {to_first: first_port, to_second: second_port}

        nat.forget(service, first_port)
        assert tracked(service) == {to_second: second_port}  # the other replica's are kept

        KernelNat({"svc": service}).install()  # a new supervisor at the same offset
        assert tracked(service) == {}
