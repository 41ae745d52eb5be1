"""Two registry builds side by side: what one read call costs each, in alternating legs.

    .venv/bin/python bench/registry_ab.py A.jar B.jar      # two builds (Tomcat vs Jetty, NIO vs NIO2, ...)
    .venv/bin/python bench/registry_ab.py A.jar --refused  # A against its floor (below)

Both processes run at once, each with the environment of the local stack's registry replica
(its database, broker and service key; ports of their own: 18091 and 18092 plus the stack's
offset, management ports 19091 and 19092) and as that replica's user. After each has served the
call for BENCH_WARMUP (the JIT's work), k6 (bench/k6/steady-rate.js) sends it at BENCH_RATE
for BENCH_LEG to one process at a time in the order A B B A A B B A, so that a drift of the
machine falls on both alike. Per leg: the process's CPU per call (/proc: every thread, the
kernel's share included), its voluntary context switches per call, k6's p50 / p99 and failures.

--refused measures A twice: as it is, and as the floor of its web server ("B"), each call sent
without the service key: the registry answers 401 from its first filters, so that leg costs
Tomcat, the filter chain and the JSON error, and no Spring MVC, no database.

A breakdown of one call, straight at two processes; the user's path is `elves run`
(bench/read-path.sh). Needs the local stack (./deployments.sh --local), k6
(tools/install-k6.sh) and root (to run as the replica's user). Prints its figures; stops
what it started.

Settings (environment): BENCH_CALL (registryUser; or registryStatus, registryHistory,
registryAllHistory, which need the user's rows: bench/registry-reads.sh seeds them),
BENCH_RATE (300), BENCH_WARMUP (120s), BENCH_LEG (30s), ELVES_BENCH_USER (bench-reads).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).parent))
from k6_run_figures import figures  # noqa: E402 - the bench's one reader of a k6 summary
from proc_cpu import tree_seconds  # noqa: E402 - a process's CPU seconds from /proc

from elves.cache import cache_root
from elves.local.client import SupervisorClient
from elves.local.layout import Layout
from elves.local.ports import Ports
from elves.local.settings import Settings

REPO = Path(__file__).resolve().parent.parent
K6 = cache_root() / "bin/k6"
CALL = os.environ.get("BENCH_CALL", "registryUser")
RATE = int(os.environ.get("BENCH_RATE", "300"))
WARMUP = os.environ.get("BENCH_WARMUP", "120s")
LEG = os.environ.get("BENCH_LEG", "30s")
USER = os.environ.get("ELVES_BENCH_USER", "bench-reads")
ORDER = "ABBAABBA"
START_SECONDS = 180  # a registry answers within this after its start, or the bench gives up


def registry_replica(settings: Settings) -> int:
    state = SupervisorClient(Ports(settings.port_offset), Layout(settings.state_dir)).state()
    pids = [p["pid"] for p in state["deployments"]["registry"]["pods"] if p.get("pid")]
    if not pids:
        sys.exit("registry-ab: the local stack has no registry replica running: ./deployments.sh --local")
    return pids[0]


def start(jar: Path, template_pid: int, port: int, management_port: int, log: Path) -> subprocess.Popen:
    """The jar with the replica's environment and user, on ports of its own."""
    environ = Path(f"/proc/{template_pid}/environ").read_bytes().decode().split("\0")
    env = dict(kv.split("=", 1) for kv in environ if "=" in kv)
    env.update(SERVER_PORT=str(port), MANAGEMENT_SERVER_PORT=str(management_port))
    uid = os.stat(f"/proc/{template_pid}").st_uid
    return subprocess.Popen(["java", "-jar", str(jar)], env=env, user=uid, stdout=log.open("w"),
                            stderr=subprocess.STDOUT, start_new_session=True)


def wait_until_answering(url: str, key: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"registry-ab: {url} exited with {process.returncode}; its log: {log}")
        try:
            if requests.get(f"{url}/api/v1/users/{USER}", headers={"X-Elves-Service-Key": key}, timeout=2).status_code < 500:
                return
        except requests.RequestException:
            pass  # still starting
        time.sleep(1)  # polling, bounded by the deadline
    sys.exit(f"registry-ab: {url} did not answer within {START_SECONDS} s; its log: {log}")


def seed_user(url: str, key: str) -> None:
    """The user the calls read exists from their first activity log on."""
    headers = {"X-Elves-Service-Key": key}
    if requests.get(f"{url}/api/v1/users/{USER}", headers=headers, timeout=10).status_code == 404:
        requests.post(f"{url}/api/v1/logs", json={"userId": USER, "endpoint": "bench"}, headers=headers,
                      timeout=10).raise_for_status()


def cpu_and_switches(pid: int) -> tuple[float, int]:
    """CPU seconds of the process (user + kernel) and its threads' voluntary context switches."""
    switches = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            for line in (task / "status").read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    switches += int(line.split()[1])
        except OSError:
            continue  # a thread that ended
    return tree_seconds(pid, {}), switches


def leg(url: str, pid: int, key: str, duration: str, work: Path) -> dict:
    summary = work / "summary.json"
    summary.unlink(missing_ok=True)
    cpu0, switches0 = cpu_and_switches(pid)
    env = {"PATH": os.environ["PATH"], "HOME": str(work), "ELVES_BENCH_TARGET": CALL, "ELVES_BENCH_RATE": str(RATE),
           "ELVES_BENCH_URL": url, "ELVES_BENCH_DURATION": duration, "ELVES_SERVICE_KEY": key,
           "ELVES_BENCH_USER": USER, "ELVES_BENCH_REQUEST": os.environ.get("ELVES_BENCH_REQUEST", "none")}
    subprocess.run([str(K6), "run", "--quiet", "--no-color", "--no-usage-report", "--summary-trend-stats",
                    "p(50),p(99),max", "--summary-export", str(summary), str(REPO / "bench/k6/steady-rate.js")],
                   env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=3600, check=False)
    cpu1, switches1 = cpu_and_switches(pid)
    if not summary.exists():
        sys.exit(f"registry-ab: k6 wrote no summary for {url}")
    result = figures(json.loads(summary.read_text()), {"cpu": cpu0}, {"cpu": cpu1})
    calls = max(result["requests"], 1)
    return result | {"ms_per_call": 1000 * result["cpu"]["cpu"] / calls, "switches": (switches1 - switches0) / calls}


def main(argv: list[str]) -> None:
    if len(argv) != 2 or not Path(argv[0]).is_file() or not (argv[1] == "--refused" or Path(argv[1]).is_file()):
        sys.exit(__doc__.split("\n\n")[1])
    if not K6.exists():
        sys.exit(f"registry-ab: no k6 at {K6}: run tools/install-k6.sh")
    settings = Settings.from_env()
    template = registry_replica(settings)
    key = (Layout(settings.state_dir).secrets / "service-key").read_text().strip()
    refused = argv[1] == "--refused"
    jars = {"A": Path(argv[0]).resolve(), "B": Path(argv[0] if refused else argv[1]).resolve()}
    keys = {"A": key, "B": "not-the-service-key" if refused else key}
    offset = settings.port_offset
    with tempfile.TemporaryDirectory(prefix="registry-ab-") as tmp:
        work = Path(tmp)
        os.chmod(work, 0o755)
        builds = ["A"] if refused else ["A", "B"]
        ports = {name: 18091 + i + offset for i, name in enumerate(builds)}
        processes = {name: start(jars[name], template, ports[name], ports[name] + 1000, work / f"{name}.log")
                     for name in builds}
        if refused:  # B is A, asked without the key
            ports["B"], processes["B"] = ports["A"], processes["A"]
        urls = {name: f"http://127.0.0.1:{port}" for name, port in ports.items()}
        try:
            for name in builds:
                wait_until_answering(urls[name], key, processes[name], work / f"{name}.log")
            seed_user(urls["A"], key)
            print(f"registry-ab: {CALL} at {RATE}/s, legs of {LEG} in the order {' '.join(ORDER)}, after {WARMUP}"
                  f" of it to each; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the start")
            for name in "AB":
                what = "A without the service key (401 from its first filters)" if refused and name == "B" else jars[name]
                print(f"  {name}: {what}")
            for name in "AB":
                leg(urls[name], processes[name].pid, keys[name], WARMUP, work)
            print(f"  {'leg':<4} {'calls':>6} {'cpu ms/call':>12} {'ctx sw/call':>12} {'p50 ms':>7} {'p99 ms':>7} failed")
            for name in ORDER:
                r = leg(urls[name], processes[name].pid, keys[name], LEG, work)
                print(f"  {name:<4} {r['requests']:>6} {r['ms_per_call']:>12.3f} {r['switches']:>12.1f}"
                      f" {r['p50']:>7.2f} {r['p99']:>7.2f} {100 * r['failed']:5.1f}%")
            print(f"  (load average {os.getloadavg()[0]:.2f} at the end)")
        finally:
            for process in {p.pid: p for p in processes.values()}.values():
                process.terminate()
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()


if __name__ == "__main__":
    main(sys.argv[1:])
