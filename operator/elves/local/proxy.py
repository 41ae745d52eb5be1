"""The local stand-in for a Kubernetes Service: the kernel's DNAT rules with HAProxy behind
them, or HAProxy alone in front of the replicas.

Membership is the supervisor's: readiness decides, as for a Service's endpoints. A loop
(and `sync()`, which the reconciler calls before it signals a replica) puts the ready replicas
in and the others out, so a change of the replica set needs no restart. Two ways
(ELVES_LOCAL_BALANCING):

- `kernel` (the default when root; otherwise HAProxy): kube-proxy's iptables mode
  (kernel_nat.py). A connection to the service port is rewritten to a ready replica's in the
  nat table, round-robin; no process forwards a byte. Per connection, as on Kubernetes, which
  has the Kubernetes consequences and the same answers: keep-alive clients stick to their
  replica, including one that is shutting down (a paused Tomcat answers 503 on such
  connections), so a stopping gateway or registry first drains (ELVES_SHUTDOWN_DRAIN: each
  answer ends its connection for a few seconds, dev.elves.web.ShutdownDrain); and a
  connection that raced a stop would be refused, so a replica leaves the rules before it is
  signalled; without those two a rolling restart fails reads (docs/decisions.md). The rules
  leave a connection alone when no replica is ready, and HAProxy, listening on the service port itself, answers it.
- `haproxy`: HAProxy (Debian's) in `mode http`, a frontend per service and a server per
  replica slot, all in maintenance until ready (its admin socket). It balances each request
  round-robin over keep-alive connections to the replicas, so a replica out of rotation gets
  no further request, and a connection a dead replica refuses is retried on another one.
  A process in the path: 14-17 % of the services' CPU (below).

Either way, with no ready replica HAProxy answers 503 with Retry-After, as an ingress would,
and closes the connection.

What it costs (bench/local-proxy.sh, bench/proxy_hop.py): HAProxy in `mode http`
uses 0.17-0.20 ms of CPU per getUser request at 400/s (two hops: client to gateway, gateway
to registry) = 14-17 % of the gateway's and registry's CPU; in `mode tcp` (measured, not
kept: per connection without the kernel's price) 0.14-0.15 ms (11-12 %): on loopback the
cost is the extra system calls and wake-ups of a process in the path, not the parsing. The
kernel's rules cost nothing measurable: 0.1 % of the services' CPU in the same bench; a hop
alone -0.3 to -0.1 us of CPU per request against direct, HAProxy's +17 to +31 us
(bench/proxy_hop.py; the NAT work is done in the system calls of the processes that send,
so it is in their CPU). Figures of a busy 2-core Xeon:
bench/results/2026-11-25-local-proxy-kernel.txt. HAProxy's CPU is in the harness's CPU line
(`cpu_seconds`).
"""

from __future__ import annotations

import asyncio
import csv
import io
import logging
import socket
from collections.abc import Callable
from pathlib import Path

from elves.local.infra import InfraError
from elves.local.kernel_nat import KernelNat
from elves.local.layout import Layout
from elves.local.os_users import MissingUser, own, unprivileged
from elves.local.ports import HOST, MAX_SLOTS, Ports
from elves.local.processes import Child, cpu_seconds_of

log = logging.getLogger(__name__)

HAPROXY = Path("/usr/sbin/haproxy")
SYNC_SECONDS = 0.1  # readiness changes reach the proxy within this
COUNTERS_SECONDS = 2.0  # how often the connection counters are read (Prometheus scrapes every 5 s)
SOCKET_TIMEOUT_SECONDS = 1.0
START_TIMEOUT_SECONDS = 10.0
STOP_GRACE_SECONDS = 5.0
RESTART_DELAY_SECONDS = 1.0

Backends = Callable[[], list[tuple[str, int]]]


class ProxyError(InfraError):
    """HAProxy cannot start: as fatal to the supervisor as a component that cannot."""


def server_name(slot: int) -> str:
    return f"r{slot}"


def render_config(ports: Ports, services: dict[str, int], admin_socket: Path) -> str:
    """HAProxy's configuration: a frontend per service, a server per replica slot."""
    lines = [
        "global",
        "    maxconn 4000",  # each takes two descriptors (client and server side)
        # One thread is plenty for a few thousand requests/s and leaves the cores to the services.
        "    nbthread 1",
        f"    stats socket {admin_socket} mode 600 level admin",
        "    hard-stop-after 5s",
        "",
        "defaults",
        # Each request balanced on its own over keep-alive connections to the replicas: a
        # replica out of rotation gets no further request (see the module's docstring).
        "    mode http",
        "    timeout connect 2s",
        # The services and the clients set their own deadlines; these only end idle connections.
        "    timeout client 5m",
        "    timeout server 5m",
        "    timeout http-keep-alive 5m",
        # A replica that refuses the connection (killed, not yet out of rotation): try another.
        "    retries 3",
        "    option redispatch 1",
        "",
    ]
    for name, port in services.items():
        body = f'{{"error":"no ready replica of {name}"}}'
        lines += [
            f"frontend {name}",
            f"    bind {HOST}:{port}",
            f"    use_backend {name}-none if {{ nbsrv({name}) eq 0 }}",
            f"    default_backend {name}",
            "",
            f"backend {name}",
            "    balance roundrobin",
        ]
        lines += [f"    server {server_name(slot)} {HOST}:{ports.replica_http(name, slot)} disabled"
                  for slot in range(MAX_SLOTS)]
        lines += [
            "",
            # Closes the connection after the 503, so that the client's next request opens a new
            # one (through the kernel's rules, when they are on, which then find a ready replica).
            f"backend {name}-none",
            f"    http-request return status 503 content-type application/json string '{body}' "
            "hdr Retry-After 1",
            "    http-after-response set-header Connection close",
            "",
        ]
    return "\n".join(lines)


class Balancer:
    """The HAProxy child, its configuration, and the replica set it balances over."""

    def __init__(self, layout: Layout, ports: Ports, backends: dict[str, Backends], kernel: bool = False) -> None:
        self.layout = layout
        self.ports = ports
        self.services = {name: port for name, port in ports.proxied().items() if name in backends}
        self._backends = backends
        self.config_file = layout.run / "haproxy.cfg"
        # In a directory of HAProxy's own: unprivileged, it creates its socket there.
        self.admin_socket = layout.run / "haproxy" / "admin.sock"
        self.child: Child | None = None
        self._in_rotation: dict[str, set[int]] = {}  # slots HAProxy has in rotation, per service
        self._slot_of = {name: {ports.replica_http(name, slot): slot for slot in range(MAX_SLOTS)}
                         for name in self.services}
        self.connections_total = {name: 0 for name in self.services}
        self.rejected_total = {name: 0 for name in self.services}  # answered 503: no ready replica
        # The kernel's DNAT in front of HAProxy, when asked for and root may set it up.
        self.nat = KernelNat(self.services) if kernel and KernelNat.possible() else None
        self._task: asyncio.Task | None = None

    # ---- life cycle -------------------------------------------------------------------

    async def start(self) -> None:
        if not HAPROXY.exists():
            raise ProxyError(f"{HAPROXY} not found: install haproxy with tools/install-local-deps.sh")
        await self._start_child()
        if self.nat is not None and not self.nat.install():
            self.nat = None
        self._update_nat()
        self._task = asyncio.ensure_future(self._loop())

    async def _start_child(self) -> None:
        try:
            user = unprivileged("haproxy")
        except MissingUser as error:
            raise ProxyError(str(error)) from None
        self.layout.run.mkdir(parents=True, exist_ok=True)
        own(self.admin_socket.parent, user, base=self.layout.root)
        self.admin_socket.unlink(missing_ok=True)
        self.config_file.write_text(render_config(self.ports, self.services, self.admin_socket))
        self.child = Child("proxy", [str(HAPROXY), "-db", "-f", str(self.config_file)], {},
                           self.layout.logs / "haproxy.log", user=user)
        self.child.start()
        self._in_rotation = {name: set() for name in self.services}
        loop = asyncio.get_running_loop()
        deadline = loop.time() + START_TIMEOUT_SECONDS
        while not self._answers():
            if self.child.poll() is not None:
                raise ProxyError(f"haproxy exited with {self.child.poll()}: see {self.child.log_path}")
            if loop.time() > deadline:
                raise ProxyError(f"haproxy did not open {self.admin_socket}: see {self.child.log_path}")
            await asyncio.sleep(SYNC_SECONDS)
        self.sync()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self.child is not None:
            await self.child.stop(STOP_GRACE_SECONDS)
        if self.nat is not None:
            self.nat.remove()

    def children(self) -> list[Child]:
        """The HAProxy process, for the supervisor's list of children (cleanup.sh kills them)."""
        return [self.child] if self.child is not None else []

    def view(self) -> dict:
        """The proxy in the supervisor's /state: its process and the CPU it has used."""
        return {"pid": self.child.pid if self.child else None, "cpuSeconds": self.cpu_seconds(),
                "balancing": "kernel" if self.nat is not None else "haproxy"}

    def cpu_seconds(self) -> float | None:
        """CPU time the proxy has used (user + system), for the harness's CPU line."""
        return None if self.child is None or self.child.pid is None else cpu_seconds_of(self.child.pid)

    async def _loop(self) -> None:
        since_counters = 0.0
        while True:
            await asyncio.sleep(SYNC_SECONDS)
            if self.child.poll() is not None:
                log.error("haproxy exited with %s; starting it again", self.child.poll())
                await asyncio.sleep(RESTART_DELAY_SECONDS)  # crash back-off
                await self._start_child()
                continue
            try:
                self.sync()
                since_counters += SYNC_SECONDS
                if since_counters >= COUNTERS_SECONDS:
                    since_counters = 0.0
                    self._read_counters()
            except OSError as error:
                log.warning("haproxy's admin socket: %s", error)

    # ---- the replica set --------------------------------------------------------------

    def sync(self) -> None:
        """Put the ready replicas in rotation and the others out (only what changed)."""
        if self.child is None or self.child.poll() is not None:
            return
        commands, changed = [], False
        for name in self.services:
            ready = {self._slot_of[name][port] for _, port in self._backends[name]()
                     if port in self._slot_of[name]}
            current = self._in_rotation[name]
            commands += [f"set server {name}/{server_name(s)} state maint" for s in sorted(current - ready)]
            commands += [f"set server {name}/{server_name(s)} state ready" for s in sorted(ready - current)]
            if ready != current:
                changed = True
                log.info("proxy %s: replicas in rotation %s", name, sorted(ready) or "none")
            self._in_rotation[name] = ready
        if commands:
            self._command("; ".join(commands))
        if changed:
            self._update_nat()

    def forget(self, name: str, slot: int) -> None:
        """The replica in `slot` of `name` has exited: the kernel forgets where it sent
        connections to it (see kernel_nat)."""
        if self.nat is not None and name in self.services:
            self.nat.forget(self.services[name], self.ports.replica_http(name, slot))

    def _update_nat(self) -> None:
        if self.nat is not None:
            self.nat.update({name: [(slot, self.ports.replica_http(name, slot)) for slot in sorted(slots)]
                             for name, slots in self._in_rotation.items()})

    def _read_counters(self) -> None:
        kernel = self.nat.connections() if self.nat is not None else {}
        table = csv.DictReader(io.StringIO(self._command("show stat").lstrip("# ")))
        for row in table:
            name = row["pxname"]
            if row["svname"] == "FRONTEND" and name in self.services:
                # With kernel balancing every connection passes the OUTPUT jump: HAProxy's are among them.
                self.connections_total[name] = kernel.get(name) or int(row.get("conn_tot") or row["stot"] or 0)
            elif row["svname"] == "BACKEND" and name.endswith("-none") and name[:-5] in self.services:
                self.rejected_total[name[:-5]] = int(row["stot"] or 0)

    def _answers(self) -> bool:
        try:
            self._command("show info")
        except OSError:
            return False
        return True

    def _command(self, command: str) -> str:
        # A local socket that answers in well under a millisecond: a blocking call is simpler
        # than a stream and keeps `sync()` usable where the supervisor cannot await.
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as admin:
            admin.settimeout(SOCKET_TIMEOUT_SECONDS)
            admin.connect(str(self.admin_socket))
            admin.sendall(command.encode() + b"\n")
            chunks = []
            while chunk := admin.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks).decode()
