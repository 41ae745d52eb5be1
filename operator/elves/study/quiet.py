"""How busy the machine is apart from the stack under test, read from /proc.

A benchmark on a shared machine measures the other work as much as the system: the suite
samples the load average and the CPU used by every process outside the stack (the local
supervisor's processes and their children, and the suite's own tree with k6) before and
during each case, waits (bounded) for a quiet machine before a case starts, and records in
run.json whether the case ran busy. The page and the gate read the record through
elves.engine.results.machine_state (busy_reason, saturated_reason), which holds the thresholds.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from elves.engine.results.machine_state import BUSY_LOAD_PER_CORE, BUSY_OUTSIDE_CORES

QUIET_WAIT_SECONDS = 600.0
SAMPLE_SECONDS = 5.0

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class Sample:
    load1: float
    outside_cores: float | None  # None on the first sample: CPU use needs two readings
    machine_cores: float | None = None  # every process's CPU, the stack's too (None on the first sample)
    at: float = 0.0  # wall-clock seconds (epoch) of the reading, to place it inside a run's load


def _busy_ticks(proc: Path) -> int:
    """CPU ticks spent on anything but idle and iowait, all cores (/proc/stat's first line)."""
    fields = [int(x) for x in (proc / "stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields[:8]) - idle


def _processes(proc: Path) -> dict[int, tuple[int, int]]:
    """{pid: (parent pid, utime + stime ticks)} of every process still there."""
    table = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            after_name = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone between the listing and the read
        table[int(entry.name)] = (int(after_name[1]), int(after_name[11]) + int(after_name[12]))
    return table


def process_tree(table: dict[int, tuple[int, int]], roots: set[int]) -> set[int]:
    """`roots` (those alive) and all their descendants."""
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in table.items():
        children.setdefault(parent, []).append(pid)
    tree, todo = set(), [pid for pid in roots if pid in table]
    while todo:
        pid = todo.pop()
        if pid not in tree:
            tree.add(pid)
            todo += children.get(pid, [])
    return tree


def stack_pids(state: dict[str, Any]) -> set[int]:
    """The local stack's processes as the supervisor's state lists them: itself, the infra, every replica."""
    pids = {(state.get("supervisor") or {}).get("pid")}
    pids |= {infra.get("pid") for infra in (state.get("infra") or {}).values()}
    pids |= {pod.get("pid") for d in (state.get("deployments") or {}).values() for pod in d.get("pods", [])}
    return {pid for pid in pids if isinstance(pid, int)}


class Sampler:
    """Successive readings of the load average and of the cores used outside the stack."""

    def __init__(self, proc: Path = Path("/proc"), stack: Callable[[], set[int]] = set,
                 own_pid: int | None = None, clock: Callable[[], float] = time.monotonic, ticks: int = _TICKS):
        self.proc, self.stack, self.clock, self.ticks = proc, stack, clock, ticks
        self.own_pid = os.getpid() if own_pid is None else own_pid
        self._last: tuple[float, int, dict[int, int]] | None = None

    def sample(self) -> Sample:
        load1 = float((self.proc / "loadavg").read_text().split()[0])
        now, busy, table = self.clock(), _busy_ticks(self.proc), _processes(self.proc)
        ours = process_tree(table, self.stack() | {self.own_pid})
        ours_ticks = {pid: table[pid][1] for pid in ours}
        outside = machine = None
        if self._last is not None:
            then, busy_then, ours_then = self._last
            # A process of ours that started since the last reading counts from 0; one that ended is
            # lost to both sides but its last ticks, so the stack is never counted as "outside".
            ours_used = sum(ticks - ours_then.get(pid, 0) for pid, ticks in ours_ticks.items())
            seconds = max(now - then, 1e-6)
            outside = max(0.0, (busy - busy_then - ours_used) / self.ticks / seconds)
            machine = max(0.0, (busy - busy_then) / self.ticks / seconds)
        self._last = (now, busy, ours_ticks)
        return Sample(load1, outside, machine, time.time())


def busy_now(sample: Sample, cores: int) -> list[str]:
    """Why the machine is too busy to start a case: empty when it is quiet."""
    reasons = []
    if sample.load1 > cores * BUSY_LOAD_PER_CORE:
        reasons.append(f"load average {sample.load1:.1f} on {cores} cores, want at most {cores * BUSY_LOAD_PER_CORE:.1f}")
    if sample.outside_cores is not None and sample.outside_cores > BUSY_OUTSIDE_CORES:
        reasons.append(f"other processes use {sample.outside_cores:.2f} cores, want at most {BUSY_OUTSIDE_CORES:.2f}")
    return reasons


def wait_until_quiet(sampler: Sampler, cores: int, out: TextIO, timeout: float = QUIET_WAIT_SECONDS,
                     interval: float = SAMPLE_SECONDS, sleep: Callable[[float], None] = time.sleep,
                     clock: Callable[[], float] = time.monotonic) -> dict[str, Any]:
    """Sample until the machine is quiet or `timeout` passed; the record of the last sample and the wait."""
    started = clock()
    sampler.sample()  # CPU use is a difference: prime it
    while True:
        sleep(interval)  # a poll of the machine's own counters, bounded by the deadline below
        sample = sampler.sample()
        reasons = busy_now(sample, cores)
        waited = clock() - started
        record = {"load1": round(sample.load1, 2), "outsideCores": _rounded(sample.outside_cores),
                  "waitedSeconds": round(waited, 1)}
        if not reasons:
            return record
        if waited >= timeout:
            print(f"suite: the machine is still busy ({'; '.join(reasons)}) after {waited:.0f}s;"
                  " running the case anyway, marked as run on a busy machine", file=out, flush=True)
            return {**record, "busy": reasons}
        until = time.strftime("%H:%M:%S UTC", time.gmtime(time.time() + timeout - waited))
        print(f"suite: waiting for a quiet machine ({'; '.join(reasons)}) until {until}", file=out, flush=True)


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


class Watch:
    """Samples in a background thread while a case runs; `during()` is what it saw, for run.json."""

    def __init__(self, sampler: Sampler, interval: float = SAMPLE_SECONDS):
        self.sampler, self.interval = sampler, interval
        self.samples: list[Sample] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="machine-watch", daemon=True)

    def __enter__(self) -> Watch:
        self.sampler.sample()
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=self.interval + 5)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.samples.append(self.sampler.sample())
            except OSError:
                continue  # a /proc read raced a process's end: the next sample counts

    def during_load(self, loads: list[tuple[float, float]]) -> dict[str, Any]:
        """What the samples taken inside the runs' loads (epoch start, end) saw: the load average
        and every process's CPU, the stack's own included, for machine_state.saturated_reason."""
        inside = [s for s in self.samples if any(start <= s.at <= end for start, end in loads)]
        machine = [s.machine_cores for s in inside if s.machine_cores is not None]
        return {"samples": len(inside),
                "load1Mean": round(sum(s.load1 for s in inside) / len(inside), 2) if inside else None,
                "load1Max": round(max(s.load1 for s in inside), 2) if inside else None,
                "machineCoresMean": _rounded(sum(machine) / len(machine)) if machine else None}

    def during(self) -> dict[str, Any]:
        outside = [s.outside_cores for s in self.samples if s.outside_cores is not None]
        return {"samples": len(self.samples),
                "load1Max": round(max((s.load1 for s in self.samples), default=0.0), 2),
                "outsideCoresMean": _rounded(sum(outside) / len(outside)) if outside else None,
                "outsideCoresMax": _rounded(max(outside)) if outside else None}


def machine_record(before: dict[str, Any], during: dict[str, Any]) -> dict[str, Any]:
    """run.json's "machine": the state before and during the case, and whether it ran busy."""
    reasons = list(before.get("busy", []))
    mean = during.get("outsideCoresMean")
    if mean is not None and mean > BUSY_OUTSIDE_CORES:
        reasons.append(f"other processes used {mean:.2f} cores on average while it ran,"
                       f" over {BUSY_OUTSIDE_CORES:.2f}")
    return {"before": {k: v for k, v in before.items() if k != "busy"}, "during": during, "busy": reasons}
