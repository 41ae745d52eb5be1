"""The local stand-in for a Kubernetes Service: one HAProxy process in front of the replicas.

The Python proxy this replaces cost p99 1.4 s at 200 requests/s on two cores (issue 10):
the benchmark measured its own plumbing. HAProxy (Debian's package) balances each request
round-robin over keep-alive connections to the replicas, for a few percent of the
services' CPU (bench/local-proxy.sh prints both).

Membership stays the supervisor's: readiness decides, as for a Service's endpoints. The
configuration declares a server for every slot of a deployment, all in maintenance; a
loop (and `sync()`, which the supervisor calls before it kills a replica) puts the ready
replicas in and the others out through HAProxy's admin socket, so a change of the replica
set needs no reload. A connection a dead replica refuses is retried on another one. With
no ready replica the proxy answers 503 with Retry-After, as an ingress would.
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
from elves.local.layout import Layout
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
            f"backend {name}-none",
            f"    http-request return status 503 content-type application/json string '{body}' "
            "hdr Retry-After 1",
            "",
        ]
    return "\n".join(lines)


class Balancer:
    """The HAProxy child, its configuration, and the replica set it balances over."""

    def __init__(self, layout: Layout, ports: Ports, backends: dict[str, Backends]) -> None:
        self.layout = layout
        self.ports = ports
        self.services = {name: port for name, port in ports.proxied().items() if name in backends}
        self._backends = backends
        self.config_file = layout.run / "haproxy.cfg"
        self.admin_socket = layout.run / "haproxy.sock"
        self.child: Child | None = None
        self._in_rotation: dict[str, set[int]] = {}  # slots HAProxy has in rotation, per service
        self._slot_of = {name: {ports.replica_http(name, slot): slot for slot in range(MAX_SLOTS)}
                         for name in self.services}
        self.connections_total = {name: 0 for name in self.services}
        self.rejected_total = {name: 0 for name in self.services}  # answered 503: no ready replica
        self._task: asyncio.Task | None = None

    # ---- life cycle -------------------------------------------------------------------

    async def start(self) -> None:
        if not HAPROXY.exists():
            raise ProxyError(f"{HAPROXY} not found: install haproxy with tools/install-local-deps.sh")
        await self._start_child()
        self._task = asyncio.ensure_future(self._loop())

    async def _start_child(self) -> None:
        self.layout.run.mkdir(parents=True, exist_ok=True)
        self.admin_socket.unlink(missing_ok=True)
        self.config_file.write_text(render_config(self.ports, self.services, self.admin_socket))
        self.child = Child("proxy", [str(HAPROXY), "-db", "-f", str(self.config_file)], {},
                           self.layout.logs / "haproxy.log")
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

    def children(self) -> list[Child]:
        """The HAProxy process, for the supervisor's list of children (cleanup.sh kills them)."""
        return [self.child] if self.child is not None else []

    def view(self) -> dict:
        """The proxy in the supervisor's /state: its process and the CPU it has used."""
        return {"pid": self.child.pid if self.child else None, "cpuSeconds": self.cpu_seconds()}

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
        commands = []
        for name in self.services:
            ready = {self._slot_of[name][port] for _, port in self._backends[name]()
                     if port in self._slot_of[name]}
            current = self._in_rotation[name]
            commands += [f"set server {name}/{server_name(s)} state maint" for s in sorted(current - ready)]
            commands += [f"set server {name}/{server_name(s)} state ready" for s in sorted(ready - current)]
            if ready != current:
                log.info("proxy %s: replicas in rotation %s", name, sorted(ready) or "none")
            self._in_rotation[name] = ready
        if commands:
            self._command("; ".join(commands))

    def _read_counters(self) -> None:
        table = csv.DictReader(io.StringIO(self._command("show stat").lstrip("# ")))
        for row in table:
            name = row["pxname"]
            if row["svname"] == "FRONTEND" and name in self.services:
                self.connections_total[name] = int(row.get("conn_tot") or row["stot"] or 0)
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
