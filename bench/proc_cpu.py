"""CPU seconds used so far by each process of the local stack, from /proc, as one JSON line.

    python3 bench/proc_cpu.py http://127.0.0.1:9400
    {"proxy": 1.2, "gateway": 30.1, "registry": 25.0, "ingestor": 3.1, "postgres": 9.8, "rabbitmq": 7.7}

Deployments sum over their replicas; a process's count includes its children, live and ended
(PostgreSQL forks a backend per connection). The bench scripts take two readings and divide
the difference by the requests served: CPU per request, a ratio that a busy machine disturbs
far less than latency. Only processes running at both readings compare: a replica that
restarted between them starts from zero.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from collections import defaultdict
from pathlib import Path

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


def snapshot(supervisor_url: str) -> dict[str, float]:
    with urllib.request.urlopen(f"{supervisor_url}/state", timeout=10) as answer:
        state = json.load(answer)
    tree = _children()
    seconds: dict[str, float] = {}
    if (state.get("proxy") or {}).get("pid"):
        seconds["proxy"] = tree_seconds(state["proxy"]["pid"], tree)
    for name, deployment in state["deployments"].items():
        seconds[name] = sum(tree_seconds(p["pid"], tree) for p in deployment["pods"] if p.get("pid"))
    for name, component in state.get("infra", {}).items():
        if component.get("pid") and name in ("postgres", "rabbitmq"):
            seconds[name] = tree_seconds(component["pid"], tree)
    return {name: round(value, 2) for name, value in seconds.items()}


if __name__ == "__main__":
    print(json.dumps(snapshot(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:9400")))
