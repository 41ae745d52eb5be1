"""The CPU one hop through the local Service costs, without the JVMs' noise around it.

    sudo .venv/bin/python bench/proxy_hop.py      # root: the kernel's DNAT too

A stand-in replica (a process answering a fixed HTTP response of the size of getUser's) and a
client that sends requests of the size of k6's, one at a time, over a few keep-alive
connections: straight to the replica, through the kernel's DNAT rules (root only) and through
HAProxy in the local mode's configuration (proxy.render_config; the `mode http` one this
replaced, for comparison). Rounds alternate between the paths; per path it prints the median
over rounds of the CPU per request of everything involved (client + replica + HAProxy, from
/proc: the kernel's NAT work is done in the senders' system calls, so it lands in theirs) and
of the round-trip time. The difference to "direct" is what the hop costs.

Settings (environment): HOP_REQUESTS per round (default 20000), HOP_ROUNDS (default 5),
HOP_CONNECTIONS (default 4).
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from elves.local.kernel_nat import KernelNat
from elves.local.ports import HOST, Ports, free_offset
from elves.local.proxy import HAPROXY, render_config, server_name

REQUESTS = int(os.environ.get("HOP_REQUESTS", "20000"))
ROUNDS = int(os.environ.get("HOP_ROUNDS", "5"))
CONNECTIONS = int(os.environ.get("HOP_CONNECTIONS", "4"))
TICKS = os.sysconf("SC_CLK_TCK")
REQUEST = (b"GET /api/v1/users/me HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: k6/1.0\r\n"
           b"Authorization: Bearer " + b"x" * 200 + b"\r\nX-Elves-Test-Id: bench/proxy\r\n\r\n")
BODY = b'{"id":"bench","firstSeen":"2026-11-25T15:21:19.223588Z"}'
RESPONSE = (b"HTTP/1.1 200 \r\nContent-Type: application/json\r\nContent-Length: " + str(len(BODY)).encode()
            + b"\r\nX-Frame-Options: DENY\r\nCache-Control: no-cache, no-store, max-age=0, must-revalidate\r\n\r\n"
            + BODY)


def cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def replica(port: int) -> None:
    """The stand-in replica: one process, every connection in turn (the client sends one
    request at a time), so that its CPU per request stays what a thread-per-connection server's
    would be without the thread switches."""
    import selectors
    listener = socket.create_server((HOST, port), backlog=64)
    listener.setblocking(False)
    poll = selectors.DefaultSelector()
    poll.register(listener, selectors.EVENT_READ)
    while True:
        for key, _ in poll.select():
            if key.fileobj is listener:
                connection, _ = listener.accept()
                connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                poll.register(connection, selectors.EVENT_READ)
            else:
                try:
                    if key.fileobj.recv(65536):
                        key.fileobj.sendall(RESPONSE)
                        continue
                except OSError:
                    pass
                poll.unregister(key.fileobj)
                key.fileobj.close()


def client(port: int) -> float:
    """REQUESTS round trips over CONNECTIONS connections; the mean round trip in µs."""
    connections = [socket.create_connection((HOST, port)) for _ in range(CONNECTIONS)]
    for connection in connections:
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    began = time.perf_counter()
    for index in range(REQUESTS):
        connection = connections[index % CONNECTIONS]
        connection.sendall(REQUEST)
        got = 0
        while got < len(RESPONSE):
            chunk = connection.recv(65536)
            if not chunk:
                raise ConnectionError(f"port {port} closed the connection")
            got += len(chunk)
    elapsed = time.perf_counter() - began
    for connection in connections:
        connection.close()
    return 1e6 * elapsed / REQUESTS


def admin(socket_path: Path, command: str) -> str:
    with socket.socket(socket.AF_UNIX) as connection:
        connection.connect(str(socket_path))
        connection.sendall(command.encode() + b"\n")
        return b"".join(iter(lambda: connection.recv(65536), b"")).decode()


def haproxy(work: Path, ports: Ports, mode: str, port: int) -> subprocess.Popen:
    name = "gateway"  # its replica slot 0 is the stand-in
    config = render_config(ports, {name: port}, work / f"{mode}.sock")
    if mode == "http":  # the per-request balancing the local Service had before it balanced connections
        config = config.replace("    mode tcp\n", "    mode http\n    timeout http-keep-alive 5m\n", 1)
    (work / f"{mode}.cfg").write_text(config)
    process = subprocess.Popen([str(HAPROXY), "-db", "-f", str(work / f"{mode}.cfg")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while not (work / f"{mode}.sock").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    admin(work / f"{mode}.sock", f"set server {name}/{server_name(0)} state ready")
    return process


def main() -> int:
    offset = free_offset(range(6000, 39000, 1500))
    if offset is None:
        print("proxy_hop: no free port offset", file=sys.stderr)
        return 1
    ports = Ports(offset)
    target = ports.replica_http("gateway", 0)
    server = subprocess.Popen([sys.executable, __file__, "--replica", str(target)])
    processes = [server]
    nat = None
    with tempfile.TemporaryDirectory() as work:
        try:
            time.sleep(0.5)
            paths = {"direct": (target, None)}
            if KernelNat.possible():
                nat = KernelNat({"gateway": ports.gateway})
                if nat.install():
                    nat.update({"gateway": [(0, target)]})
                    paths["kernel DNAT"] = (ports.gateway, None)
            for mode, port in (("tcp", ports.registry), ("http", ports.supervisor)):
                process = haproxy(Path(work), ports, mode, port)
                processes.append(process)
                paths[f"HAProxy mode {mode}"] = (port, process)
            results = {label: [] for label in paths}
            client(target)  # warm-up
            for _ in range(ROUNDS):
                for label, (port, proxy) in paths.items():
                    pids = [server.pid] + ([proxy.pid] if proxy else [])
                    before = sum(map(cpu, pids)) + time.process_time()
                    rtt = client(port)
                    used = sum(map(cpu, pids)) + time.process_time() - before
                    results[label].append((1e6 * used / REQUESTS, rtt))
        finally:
            if nat is not None:
                nat.remove()
            for process in processes:
                process.terminate()
                process.wait(timeout=10)
    print(f"{REQUESTS} requests x {ROUNDS} rounds per path over {CONNECTIONS} keep-alive connections, "
          f"on {os.cpu_count()} cores (load average {os.getloadavg()[0]:.2f} at the end):")
    direct = statistics.median(c for c, _ in results["direct"])
    for label, runs in results.items():
        used = statistics.median(c for c, _ in runs)
        print(f"  {label:<18} CPU per request {used:6.1f} µs ({used - direct:+5.1f} µs for the hop; rounds: "
              f"{', '.join(f'{c:.0f}' for c, _ in runs)}), round trip {statistics.median(r for _, r in runs):5.1f} µs")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--replica"]:
        replica(int(sys.argv[2]))
    else:
        sys.exit(main())
