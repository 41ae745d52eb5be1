"""What the publish benches (bench/kafka_publish.py, bench/rabbitmq_publish.py) share: an unmodified
k6 running an example's publish script at rising arrival rates against one of Elves' publishers,
one JSON line per rate (the messages confirmed per second, k6's dropped iterations and failed
share, p50/p99 of the confirmation, the CPU seconds each named process used per 1,000 confirmed,
the load average before and after), then the highest rate held: nothing dropped or failed and at
least 99 % of the planned rate confirmed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from k6_run_figures import figures  # the bench's one reader of a k6 summary
from proc_cpu import tree_seconds  # a process's CPU seconds from /proc

from elves.cache import cache_root

K6 = cache_root() / "bin" / "k6"
HELD_SHARE = 0.99
PUBLISH_EXEC = "publishOrder"  # the examples' publish function, and its endpoint tag


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def step(rate: int, seconds: int, script: Path, env: dict[str, str], work: Path, pids: dict[str, int]) -> dict:
    summary = work / "summary.json"
    summary.unlink(missing_ok=True)
    scenarios = {PUBLISH_EXEC: {"executor": "constant-arrival-rate", "exec": PUBLISH_EXEC, "rate": rate,
                                "timeUnit": "1s", "duration": f"{seconds}s", "preAllocatedVUs": 200, "maxVUs": 600}}
    env = {"PATH": os.environ["PATH"], "HOME": str(work), "ELVES_K6_SCENARIOS": json.dumps(scenarios),
           "ELVES_TEST_ID": f"bench/publish/{rate}", **env}
    before = {name: tree_seconds(pid, {}) for name, pid in pids.items()}
    load_before = load_average()
    subprocess.run([str(K6), "run", "--quiet", "--no-color", "--no-usage-report", "--summary-trend-stats",
                    "p(50),p(99),max", "--summary-export", str(summary), str(script)],
                   env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=seconds + 120, check=False)
    after = {name: tree_seconds(pid, {}) for name, pid in pids.items()}
    if not summary.exists():
        sys.exit(f"{script}: k6 wrote no summary at {rate}/s")
    result = figures(json.loads(summary.read_text()), before, after)
    confirmed = json.loads(summary.read_text())["metrics"]["checks"].get("passes", 0)
    per_thousand = {name: round(1000 * cpu / max(confirmed, 1), 3) for name, cpu in result.pop("cpu").items()}
    held = (result["dropped"] == 0 and result["failed"] == 0 and confirmed >= HELD_SHARE * rate * seconds)
    return {"rate": rate, "confirmedPerSecond": round(confirmed / seconds, 1), "held": held, **result,
            "cpuSecondsPer1000": per_thousand, "loadBefore": load_before, "loadAfter": load_average()}


def run_rates(rates: list[int], seconds: int, script: Path, env: dict[str, str], work: Path,
              pids: dict[str, int]) -> None:
    """Each rate in turn, one line each, then the highest held."""
    held = 0
    for rate in rates:
        line = step(rate, seconds, script, env, work, pids)
        print(json.dumps(line), flush=True)
        held = rate if line["held"] else held
    print(f"# held: {held}/s (the highest rate with nothing dropped or failed and >= 99 % confirmed)")
