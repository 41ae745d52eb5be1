"""CPU seconds used so far by each process of the local stack, from /proc, as one JSON line.

    .venv/bin/python bench/proc_cpu.py      # the stack of ELVES_STATE_DIR / ELVES_LOCAL_PORT_OFFSET
    {"proxy": 1.2, "gateway": 30.1, "gateway.jit": 12.0, "registry": 25.0, ...}

The process ids come from the supervisor's /state, asked with its control token as every
client of it does (elves.local.client).

Deployments sum over their replicas; a process's count includes its children, live and ended
(PostgreSQL forks a backend per connection). `<deployment>.jit` is the part its JIT compiler
threads used: a young JVM compiles for minutes, which is no cost of the requests it serves, so
the bench scripts report the CPU per request without it too. They take two readings and divide
the difference by the requests served: CPU per request, a ratio that a busy machine disturbs
far less than latency. Only processes running at both readings compare: a replica that
restarted between them starts from zero.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

from elves.local.client import SupervisorClient
from elves.local.layout import Layout
from elves.local.ports import Ports
from elves.local.settings import Settings

TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = defaultdict(list)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) is not None:
            tree[int(fields[1])].append(int(entry.name))
    return tree


def tree_seconds(pid: int, tree: dict[int, list[int]]) -> float:
    """utime + stime of `pid` and of its ended children (cutime + cstime), plus its live descendants."""
    fields = _stat(pid)
    if fields is None:
        return 0.0
    own = sum(int(f) for f in fields[11:15]) / TICKS
    return own + sum(tree_seconds(child, tree) for child in tree.get(pid, ()))


def jit_seconds(pid: int) -> float:
    """CPU of a JVM's JIT compiler threads (C1, C2)."""
    total = 0.0
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            if (task / "comm").read_text().startswith(("C1 Compiler", "C2 Compiler")):
                total += sum(int(f) for f in (task / "stat").read_text().rsplit(")", 1)[1].split()[11:13]) / TICKS
        except OSError:
            continue
    return total


def snapshot() -> dict[str, float]:
    settings = Settings.from_env()
    state = SupervisorClient(Ports(settings.port_offset), Layout(settings.state_dir)).state()
    tree = _children()
    seconds: dict[str, float] = {}
    if (state.get("proxy") or {}).get("pid"):
        seconds["proxy"] = tree_seconds(state["proxy"]["pid"], tree)
    for name, deployment in state["deployments"].items():
        pids = [p["pid"] for p in deployment["pods"] if p.get("pid")]
        seconds[name] = sum(tree_seconds(pid, tree) for pid in pids)
        seconds[f"{name}.jit"] = sum(jit_seconds(pid) for pid in pids)
    for name, component in state.get("infra", {}).items():
        if component.get("pid") and name in ("postgres", "rabbitmq"):
            seconds[name] = tree_seconds(component["pid"], tree)
    return {name: round(value, 2) for name, value in seconds.items()}


if __name__ == "__main__":
    print(json.dumps(snapshot()))
