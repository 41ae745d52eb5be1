"""Kernel balancing for the local Service: iptables DNAT rules, as kube-proxy's iptables mode.

A chain per service (ELVES-SVC-<port>) reached from the nat table's OUTPUT chain for
connections to 127.0.0.1:<port>. It holds a DNAT rule per ready replica, taken in turn
(statistic nth: each connection skips the rules before it by count, so connections go
round-robin); the kernel rewrites the connection's first packet and conntrack the rest, so
no process reads or forwards a byte. An empty chain lets the connection through to the
service port itself, where HAProxy answers (503 while no replica is ready).

Only root may change the tables; `KernelNat.install()` says whether it could. The rules
outlive a supervisor killed with SIGKILL: a new one at the same offset replaces them, and
`remove()` (the supervisor's close) deletes them.

The kernel keeps the rule's choice in the connection's tracking entry, and an entry can
outlive its connection. A new connection that reuses such an entry's client port goes where
the entry says, not where the rules say, and is refused once that replica is gone. So
`forget()` deletes a replica's entries once its process has exited, and `install()` and
`remove()` those of every service port (the `conntrack` tool, Debian's; without it, a
warning). What showed it: docs/decisions.md.
"""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path

from elves.local.ports import HOST

log = logging.getLogger(__name__)

IPTABLES = Path("/usr/sbin/iptables")
IPTABLES_RESTORE = Path("/usr/sbin/iptables-restore")
CONNTRACK = Path("/usr/sbin/conntrack")
COMMAND_TIMEOUT_SECONDS = 10.0


def chain_name(port: int) -> str:
    return f"ELVES-SVC-{port}"


def jump_rule(name: str, port: int) -> list[str]:
    """The OUTPUT rule that sends connections to the service port through its chain."""
    return ["-d", f"{HOST}/32", "-p", "tcp", "-m", "tcp", "--dport", str(port),
            "-m", "comment", "--comment", f"elves local Service {name}", "-j", chain_name(port)]


def render_rules(services: dict[str, int], ready: dict[str, list[tuple[int, int]]]) -> str:
    """iptables-restore input replacing each service's chain with a DNAT rule per ready replica.

    `ready` maps a service to its ready replicas as (slot, port). Declaring a chain empties it,
    and `--noflush` leaves the rest of the table alone (kube-proxy's chains, OUTPUT), so the
    replacement is one atomic transaction.
    """
    lines = ["*nat"] + [f":{chain_name(port)} - [0:0]" for port in services.values()]
    for name, port in services.items():
        replicas = ready.get(name, [])
        for index, (slot, target) in enumerate(replicas):
            left = len(replicas) - index
            turn = f" -m statistic --mode nth --every {left} --packet 0" if left > 1 else ""
            lines.append(f"-A {chain_name(port)} -p tcp{turn} -m comment --comment \"elves {name} r{slot}\" "
                         f"-j DNAT --to-destination {HOST}:{target}")
    lines.append("COMMIT")
    return "\n".join(lines) + "\n"


def parse_jump_counters(listing: str, services: dict[str, int]) -> dict[str, int]:
    """Connections per service from `iptables -t nat -nvxL OUTPUT` (packets of the jump rule:
    the nat table sees only a connection's first packet)."""
    by_chain = {chain_name(port): name for name, port in services.items()}
    counts = {name: 0 for name in services}
    for line in listing.splitlines():
        fields = line.split()
        if len(fields) > 2 and fields[2] in by_chain and fields[0].isdigit():
            counts[by_chain[fields[2]]] += int(fields[0])
    return counts


class KernelNat:
    """The DNAT rules of one stack's services (chains named by port, so stacks at other offsets
    keep theirs)."""

    def __init__(self, services: dict[str, int]) -> None:
        self.services = services
        self.installed = False
        self._warned_no_conntrack = False

    @staticmethod
    def possible() -> bool:
        return os.geteuid() == 0 and IPTABLES.exists() and IPTABLES_RESTORE.exists()

    def install(self) -> bool:
        """Empty chains and the OUTPUT jumps (those of an earlier supervisor replaced). False
        when the kernel refuses (no CAP_NET_ADMIN, no nat table): HAProxy then balances."""
        try:
            self._delete_jumps()
            self._restore(render_rules(self.services, {}))
            self._forget_all()
            for name, port in self.services.items():
                self._iptables("-I", "OUTPUT", *jump_rule(name, port))
        except (OSError, subprocess.SubprocessError) as error:
            log.warning("kernel balancing unavailable, HAProxy balances: %s", error)
            self.remove()
            return False
        self.installed = True
        return True

    def update(self, ready: dict[str, list[tuple[int, int]]]) -> None:
        if not self.installed:
            return
        try:
            self._restore(render_rules(self.services, ready))
        except (OSError, subprocess.SubprocessError) as error:
            # The next change of the replica set writes every chain again.
            log.error("could not update the kernel balancing rules: %s", error)

    def forget(self, service_port: int, replica_port: int) -> None:
        """Deletes the tracking entries of connections to `service_port` that the rules sent
        to `replica_port`: call it once nothing listens there any more (a live connection
        whose entry is deleted is picked up again with a fresh choice of replica)."""
        if self.installed:
            self._conntrack_delete("--orig-port-dst", str(service_port), "--reply-port-src", str(replica_port))

    def connections(self) -> dict[str, int]:
        if not self.installed:
            return {}
        try:
            return parse_jump_counters(self._iptables("-nvxL", "OUTPUT"), self.services)
        except (OSError, subprocess.SubprocessError) as error:
            log.warning("could not read the kernel balancing counters: %s", error)
            return {}

    def remove(self) -> None:
        self.installed = False
        try:
            self._delete_jumps()
            for port in self.services.values():
                self._iptables("-F", chain_name(port), check=False)
                self._iptables("-X", chain_name(port), check=False)
        except (OSError, subprocess.SubprocessError) as error:
            log.warning("could not remove the kernel balancing rules: %s", error)
        self._forget_all()

    def _forget_all(self) -> None:
        """Deletes the tracking entries of every service port: an earlier stack's, whose
        replicas are gone (at install), or this one's (at remove)."""
        for port in self.services.values():
            self._conntrack_delete("--orig-port-dst", str(port))

    def _conntrack_delete(self, *selection: str) -> None:
        if not CONNTRACK.exists():
            if not self._warned_no_conntrack:
                self._warned_no_conntrack = True
                log.warning("%s not found (tools/install-local-deps.sh installs it): connections may be sent "
                            "to replicas that are gone", CONNTRACK)
            return
        try:
            # Exit status 1 with "0 flow entries have been deleted" is not an error.
            done = self._run([str(CONNTRACK), "-D", "-p", "tcp", "--orig-dst", HOST, *selection], check=False)
        except (OSError, subprocess.SubprocessError) as error:
            log.warning("could not delete connection tracking entries (%s): %s", " ".join(selection), error)
            return
        if done.returncode != 0 and " 0 flow entries" not in done.stderr:
            log.warning("could not delete connection tracking entries (%s): %s", " ".join(selection),
                        done.stderr.strip())

    def _delete_jumps(self) -> None:
        for name, port in self.services.items():
            # One at a time until none is left (a supervisor killed mid-start may leave two).
            while self._run([str(IPTABLES), "-t", "nat", "-D", "OUTPUT", *jump_rule(name, port)],
                            check=False).returncode == 0:
                pass

    def _restore(self, rules: str) -> None:
        self._run([str(IPTABLES_RESTORE), "--noflush"], stdin=rules)

    def _iptables(self, *args: str, check: bool = True) -> str:
        return self._run([str(IPTABLES), "-w", "-t", "nat", *args], check=check).stdout

    @staticmethod
    def _run(argv: list[str], stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_SECONDS)
        if check and done.returncode != 0:
            raise subprocess.SubprocessError(f"{' '.join(argv[:4])}: {done.stderr.strip()}")
        return done
