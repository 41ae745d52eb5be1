"""The rate at which load published into a Kafka topic holds on this machine: an unmodified k6
posting the example's script (loadtests/examples/own-system-kafka/orders.js) through Elves'
publisher (elves.kafka.publish) to a KRaft broker (elves.kafka.broker), all on this machine's
cores, at rising arrival rates.

    .venv/bin/python bench/kafka_publish.py > bench/results/<date>-kafka-publish.txt

Per rate it prints one JSON line: the records k6 got confirmed (200) per second, k6's dropped
iterations and failed share, p50/p99 of the confirmation, and the CPU seconds the publisher and
the broker used per 1,000 records; then the highest rate held (nothing dropped or failed, at
least 99 % of the planned rate confirmed). The load average before and after each step is part
of each line: on a shared machine it is what the figures came from.

Settings (environment): KAFKA_BENCH_RATES (records/s, default 250,500,1000,2000),
KAFKA_BENCH_SECONDS per rate (default 20). Needs tools/install-kafka.sh and tools/install-k6.sh.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import requests

sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).parents[1] / "tools" / "lib")]
from k6_run_figures import figures  # noqa: E402 - the bench's one reader of a k6 summary
from proc_cpu import tree_seconds  # noqa: E402 - a process's CPU seconds from /proc
from polling import wait_for  # noqa: E402 - tools/lib, the one way to wait

from elves.cache import cache_root  # noqa: E402
from elves.kafka.broker import STOP_GRACE_SECONDS, Broker, default_libs, pinned_version  # noqa: E402
from elves.local.ports import HOST, Ports  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
K6 = cache_root() / "bin" / "k6"
SCRIPT = REPO / "loadtests" / "examples" / "own-system-kafka" / "orders.js"
RATES = [int(r) for r in os.environ.get("KAFKA_BENCH_RATES", "250,500,1000,2000").split(",")]
SECONDS = int(os.environ.get("KAFKA_BENCH_SECONDS", "20"))
HEADER = "X-Test-Id"
HELD_SHARE = 0.99


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def step(rate: int, url: str, work: Path, pids: dict[str, int]) -> dict:
    summary = work / "summary.json"
    summary.unlink(missing_ok=True)
    scenarios = {"publishOrder": {"executor": "constant-arrival-rate", "exec": "publishOrder", "rate": rate,
                                  "timeUnit": "1s", "duration": f"{SECONDS}s", "preAllocatedVUs": 200, "maxVUs": 600}}
    env = {"PATH": os.environ["PATH"], "HOME": str(work), "ELVES_K6_SCENARIOS": json.dumps(scenarios),
           "ELVES_TEST_ID": f"bench/kafka-publish/{rate}", "KAFKA_PUBLISH_URL": url, "KAFKA_TOPIC": "bench.orders"}
    before = {name: tree_seconds(pid, {}) for name, pid in pids.items()}
    load_before = load_average()
    subprocess.run([str(K6), "run", "--quiet", "--no-color", "--no-usage-report", "--summary-trend-stats",
                    "p(50),p(99),max", "--summary-export", str(summary), str(SCRIPT)],
                   env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=SECONDS + 120, check=False)
    after = {name: tree_seconds(pid, {}) for name, pid in pids.items()}
    if not summary.exists():
        sys.exit(f"kafka-publish: k6 wrote no summary at {rate}/s")
    result = figures(json.loads(summary.read_text()), before, after)
    confirmed = json.loads(summary.read_text())["metrics"]["checks"].get("passes", 0)
    per_thousand = {name: round(1000 * cpu / max(confirmed, 1), 3) for name, cpu in result.pop("cpu").items()}
    held = (result["dropped"] == 0 and result["failed"] == 0 and confirmed >= HELD_SHARE * rate * SECONDS)
    return {"rate": rate, "confirmedPerSecond": round(confirmed / SECONDS, 1), "held": held, **result,
            "cpuSecondsPer1000": per_thousand, "loadBefore": load_before, "loadAfter": load_average()}


def main() -> None:
    libs = default_libs(pinned_version(REPO))
    if not any(libs.glob("kafka_2.13-*.jar")) or not K6.exists():
        sys.exit("kafka-publish: needs Kafka's jars (tools/install-kafka.sh) and k6 (tools/install-k6.sh)")
    ports = Ports(int(os.environ.get("ELVES_LOCAL_PORT_OFFSET", "0")))
    with tempfile.TemporaryDirectory(prefix="kafka-publish-") as tmp:
        work = Path(tmp)
        broker = Broker(home=work / "kafka", libs=libs, port=ports.kafka, controller_port=ports.kafka_controller)
        child = asyncio.run(broker.start())
        listen = f"{HOST}:{ports.kafka_publish}"
        with open(work / "publish.log", "ab") as log:
            publisher = subprocess.Popen([sys.executable, "-m", "elves.kafka.publish", "--bootstrap", broker.bootstrap,
                                          "--listen", listen, "--header", HEADER], stdout=log, stderr=subprocess.STDOUT)
        try:
            url = f"http://{listen}"
            wait_for(lambda: requests.post(f"{url}/topics/bench.orders", data=b"{}", headers={HEADER: "warm"},
                                           timeout=15).status_code == 200,
                     "the publisher confirming a first record", 60, ignore=(requests.RequestException,))
            print(f"# {pinned_version(REPO)} broker, {SECONDS} s per rate, {os.cpu_count()} cores", flush=True)
            held = 0
            for rate in RATES:
                line = step(rate, url, work, {"publisher": publisher.pid, "broker": child.pid})
                print(json.dumps(line), flush=True)
                held = rate if line["held"] else held
            print(f"# held: {held}/s (the highest rate with nothing dropped or failed and >= 99 % confirmed)")
        finally:
            publisher.terminate()
            publisher.wait(timeout=10)
            asyncio.run(child.stop(STOP_GRACE_SECONDS))


if __name__ == "__main__":
    main()
