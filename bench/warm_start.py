"""How fast the services are from a fresh start, through the local stack (bench/warm-start.sh).

Restarts every service at once with the supervisor's reset (as `spec.reset: true` does: three
JVMs starting together on the shared cores, the system's real cold state), then measures:
- per service, the time from its process start to Ready (its readiness endpoint answering 200,
  polled every READY_POLL_SECONDS) and the CPU seconds its JVM used by then;
- the JIT, by the engine's rule (elves.engine.results.warmup: every service compiling less than
  JIT_SETTLED_MS_PER_SECOND over a WINDOW_SECONDS window): the first step from which it stayed
  settled to the end, counted from the first service's start;
- once all are Ready, k6 reading through the local Service (getUser: gateway, registry,
  PostgreSQL) at RATE per second for LOAD_SECONDS: the first P99_WINDOW_SECONDS window whose p99
  is under P99_TARGET_MS, and the window from which every later one stayed under it.
Prints the figures with the machine's load average and the command line each service ran; the
caller keeps the output as the raw file. Asserts nothing.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from proc_cpu import jit_seconds

from elves.constants import GATEWAY, INGESTOR, REGISTRY
from elves.engine.results.warmup import JIT_SETTLED_MS_PER_SECOND, STEP_SECONDS, WINDOW_SECONDS, jit_settled
from elves.local.client import SupervisorClient
from elves.local.layout import Layout
from elves.local.ports import Ports
from elves.local.processes import cpu_seconds_of
from elves.local.settings import Settings

DEPLOYMENTS = (GATEWAY, REGISTRY, INGESTOR)
READY_POLL_SECONDS = 0.1
# The reset stops the services, empties the data and starts them again; on two busy cores a
# start has taken up to 80 s.
RESTART_DEADLINE_SECONDS = 240.0
RATE = int(os.environ.get("ELVES_BENCH_RATE", "100"))
LOAD_SECONDS = int(os.environ.get("ELVES_BENCH_LOAD_SECONDS", "120"))
P99_TARGET_MS = 50.0
P99_WINDOW_SECONDS = 10
BENCH = Path(__file__).resolve().parent
TICKS = os.sysconf("SC_CLK_TCK")
BOOT_TIME = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                 if line.startswith("btime"))


def started_at(pid: int) -> float:
    """A process's start as wall-clock time (from /proc: boot time plus its start in ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return BOOT_TIME + int(fields[19]) / TICKS


def first_pods(state: dict) -> dict[str, dict]:
    return {name: state["deployments"][name]["pods"][0] for name in DEPLOYMENTS
            if state["deployments"][name]["pods"]}


def new_replicas(client: SupervisorClient, old_pids: dict[str, int], deadline: float) -> dict[str, dict]:
    """Each service's replica started by the reset (a pid other than before it)."""
    while time.time() < deadline:
        pods = first_pods(client.state())
        if all(pods.get(n, {}).get("pid") not in (None, old_pids.get(n)) for n in DEPLOYMENTS):
            return pods
        time.sleep(READY_POLL_SECONDS)
    raise TimeoutError(f"the reset did not start new replicas within {RESTART_DEADLINE_SECONDS:g} s")


def ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/actuator/health/readiness", timeout=1) as answer:
            return answer.status == 200
    except OSError:
        return False


def compiled_ms(port: int) -> float | None:
    """The JVM's jvm_compilation_time_ms_total, from its own /actuator/prometheus."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/actuator/prometheus", timeout=2) as answer:
            text = answer.read().decode()
    except OSError:
        return None
    values = [float(m.group(1)) for m in re.finditer(r"^jvm_compilation_time_ms_total\{[^}]*\} (\S+)$", text, re.M)]
    return sum(values) if values else None


class Watch:
    """Readiness and JIT samples of the three replicas, taken on one loop."""

    def __init__(self, pods: dict[str, dict]) -> None:
        self.pods = pods
        self.start = {n: started_at(p["pid"]) for n, p in pods.items()}
        self.t0 = min(self.start.values())
        self.ready_at: dict[str, float] = {}
        self.cpu_at_ready: dict[str, float] = {}
        self.jit: dict[str, list[tuple[float, float]]] = {n: [] for n in pods}
        self.next_sample = self.t0

    def poll(self) -> None:
        now = time.time()
        for name, pod in self.pods.items():
            if name not in self.ready_at and ready(pod["managementPort"]):
                self.ready_at[name] = time.time()
                self.cpu_at_ready[name] = cpu_seconds_of(pod["pid"]) or math.nan
        if now >= self.next_sample:
            for name, pod in self.pods.items():
                if (ms := compiled_ms(pod["managementPort"])) is not None:
                    self.jit[name].append((now, ms))
            self.next_sample = now + STEP_SECONDS

    def jit_rates(self) -> dict[str, list[tuple[float, float | None]]]:
        """ms of compilation per second over the WINDOW_SECONDS before each sample."""
        rates: dict[str, list[tuple[float, float | None]]] = {}
        for name, samples in self.jit.items():
            rates[name] = []
            for t, ms in samples:
                earlier = [(u, v) for u, v in samples if u <= t - WINDOW_SECONDS]
                rates[name].append((t, (ms - earlier[-1][1]) / (t - earlier[-1][0]) if earlier else None))
        return rates

    def jit_settled_at(self) -> float | None:
        """The engine's rule on the samples: the first from which every service stayed settled."""
        rates = self.jit_rates()
        steps = [t for t, _ in rates[GATEWAY]]
        # Each service's samples are on its own clock; align them to the gateway's steps.
        grid = {n: [(t, _nearest(points, t)) for t in steps] for n, points in rates.items()}
        since = None
        for t in reversed(steps):
            if not jit_settled(grid, t):
                break
            since = t
        return since


def _nearest(points: list[tuple[float, float | None]], t: float) -> float | None:
    best = min(points, key=lambda p: abs(p[0] - t), default=None)
    return best[1] if best is not None and abs(best[0] - t) < STEP_SECONDS / 2 else None


def p99_windows(csv_path: Path) -> list[tuple[float, float, int, int]]:
    """(window start, p99 ms, requests, failed) per P99_WINDOW_SECONDS window of k6's csv output."""
    durations: dict[int, list[float]] = {}
    failed: dict[int, int] = {}
    with csv_path.open() as handle:
        for row in csv.DictReader(handle):
            second = int(float(row["timestamp"]) / 1000) // P99_WINDOW_SECONDS * P99_WINDOW_SECONDS
            if row["metric_name"] == "http_req_duration":
                durations.setdefault(second, []).append(float(row["metric_value"]))
            elif row["metric_name"] == "http_req_failed" and float(row["metric_value"]) > 0:
                failed[second] = failed.get(second, 0) + 1
    windows = []
    for second in sorted(durations):
        values = sorted(durations[second])
        windows.append((float(second), values[max(0, math.ceil(0.99 * len(values)) - 1)], len(values),
                        failed.get(second, 0)))
    return windows


def load(settings: Settings, ports: Ports, work: Path) -> tuple[Path, subprocess.Popen]:
    token = subprocess.run([str(BENCH.parent / ".venv/bin/elves"), "token", "--user", "bench-warm"],
                           check=True, capture_output=True, text=True).stdout.strip()
    out = work / "k6.csv"
    env = {**os.environ, "ELVES_BENCH_TARGET": "getUser", "ELVES_BENCH_RATE": str(RATE),
           "ELVES_BENCH_DURATION": f"{LOAD_SECONDS}s", "ELVES_BENCH_URL": ports.url(ports.gateway),
           "ELVES_BENCH_TOKEN": token, "ELVES_BENCH_TEST_ID": "bench/warm-start",
           "K6_CSV_TIME_FORMAT": "unix_milli"}
    return out, subprocess.Popen([str(settings.k6_binary), "run", "--quiet", "--out", f"csv={out}",
                                  str(BENCH / "k6" / "steady-rate.js")], env=env,
                                 stdout=subprocess.DEVNULL, stderr=open(work / "k6.log", "w"))


def main() -> int:
    settings = Settings.from_env()
    ports = Ports(settings.port_offset)
    client = SupervisorClient(ports, Layout(settings.state_dir))
    print(f"warm-start bench on {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the start, "
          f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}")
    old = {n: p.get("pid") for n, p in first_pods(client.state()).items()}
    client.reset()
    pods = new_replicas(client, old, time.time() + RESTART_DEADLINE_SECONDS)
    watch = Watch(pods)
    for name, pod in pods.items():
        argv = Path(f"/proc/{pod['pid']}/cmdline").read_text().replace("\0", " ").strip()
        print(f"  {name} runs: {argv}")
    deadline = time.time() + RESTART_DEADLINE_SECONDS
    while len(watch.ready_at) < len(pods):
        if time.time() > deadline:
            raise TimeoutError(f"not Ready within {RESTART_DEADLINE_SECONDS:g} s: "
                               f"{sorted(set(pods) - set(watch.ready_at))}")
        watch.poll()
        time.sleep(READY_POLL_SECONDS)
    with tempfile.TemporaryDirectory() as tmp:
        load_start = time.time()
        out, k6 = load(settings, ports, Path(tmp))
        while k6.poll() is None:  # k6 ends after LOAD_SECONDS (and its graceful stop)
            watch.poll()
            time.sleep(READY_POLL_SECONDS)
        windows = p99_windows(out)
    end_cpu = {n: cpu_seconds_of(p["pid"]) for n, p in pods.items()}
    end_jit = {n: jit_seconds(p["pid"]) for n, p in pods.items()}
    t0 = watch.t0
    for name in DEPLOYMENTS:
        print(f"{name:9} start->Ready {watch.ready_at[name] - watch.start[name]:6.1f} s  "
              f"CPU by Ready {watch.cpu_at_ready[name]:5.1f} s  CPU by the end {end_cpu[name]:6.1f} s "
              f"(JIT {end_jit[name]:.1f} s)")
    settled = watch.jit_settled_at()
    print(f"all Ready            {max(watch.ready_at.values()) - t0:6.1f} s after the first service's start")
    print(f"JIT settled          " + (f"{settled - t0:6.1f} s after the first service's start" if settled
                                      else f"never (in {time.time() - t0:.0f} s)") +
          f"  (engine rule: every JIT < {JIT_SETTLED_MS_PER_SECOND:g} ms/s over {WINDOW_SECONDS:g} s)")
    under = [w for w in windows if w[1] < P99_TARGET_MS]
    held = None
    for window in reversed(windows[:-1]):  # the last window is k6's partial one
        if window[1] >= P99_TARGET_MS:
            break
        held = window
    print(f"p99 < {P99_TARGET_MS:g} ms at {RATE}/s  first window "
          + (f"{under[0][0] - t0:6.1f} s" if under else "never") + " after the start, held from "
          + (f"{held[0] - t0:6.1f} s" if held else "never") + f" (load from {load_start - t0:.1f} s)")
    print("  windows (s after the start: p99 ms, requests, failed): " + ", ".join(
        f"{w[0] - t0:.0f}: {w[1]:.0f}/{w[2]}/{w[3]}" for w in windows))
    print("  JIT ms/s (s after the start): " + "; ".join(
        f"{n} " + " ".join(f"{t - t0:.0f}:{r:.0f}" for t, r in points if r is not None)
        for n, points in watch.jit_rates().items()))
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    print(json.dumps({"ready_s": {n: round(watch.ready_at[n] - watch.start[n], 2) for n in DEPLOYMENTS},
                      "cpu_at_ready_s": {n: round(v, 2) for n, v in watch.cpu_at_ready.items()},
                      "jit_settled_s": None if settled is None else round(settled - t0, 1),
                      "p99_first_s": round(under[0][0] - t0, 1) if under else None,
                      "p99_held_s": round(held[0] - t0, 1) if held else None}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
