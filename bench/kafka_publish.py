"""The rate at which load published into a Kafka topic holds on this machine: an unmodified k6
posting the example's script (loadtests/examples/own-system-kafka/orders.js) through Elves'
publisher (elves.kafka.publish) to a KRaft broker (elves.kafka.broker), all on this machine's
cores, at rising arrival rates.

    .venv/bin/python bench/kafka_publish.py > bench/results/<date>-kafka-publish.txt

Per rate it prints one JSON line (bench/publish_rates.py: the records confirmed per second, the CPU
seconds the publisher and the broker used per 1,000, the load average before and after), then the
highest rate held.

Settings (environment): KAFKA_BENCH_RATES (records/s, default 250,500,1000,2000),
KAFKA_BENCH_SECONDS per rate (default 20). Needs tools/install-kafka.sh and tools/install-k6.sh.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import requests

sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).parents[1] / "tools" / "lib")]
from polling import wait_for  # noqa: E402 - tools/lib, the one way to wait
from publish_rates import K6, run_rates  # noqa: E402 - the publish benches' one stepper

from elves.kafka.broker import STOP_GRACE_SECONDS, Broker, default_libs, pinned_version  # noqa: E402
from elves.local.ports import HOST, Ports  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "loadtests" / "examples" / "own-system-kafka" / "orders.js"
RATES = [int(r) for r in os.environ.get("KAFKA_BENCH_RATES", "250,500,1000,2000").split(",")]
SECONDS = int(os.environ.get("KAFKA_BENCH_SECONDS", "20"))
HEADER = "X-Test-Id"


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
            run_rates(RATES, SECONDS, SCRIPT, {"KAFKA_PUBLISH_URL": url, "KAFKA_TOPIC": "bench.orders"}, work,
                      {"publisher": publisher.pid, "broker": child.pid})
        finally:
            publisher.terminate()
            publisher.wait(timeout=10)
            asyncio.run(child.stop(STOP_GRACE_SECONDS))


if __name__ == "__main__":
    main()
