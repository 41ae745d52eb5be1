"""The rate at which load published into a RabbitMQ exchange holds on this machine: an unmodified
k6 posting the example's script (loadtests/examples/own-system-rabbitmq/orders.js) through Elves'
publisher (elves.rabbitmq.publish, publisher confirms) to the local stack's RabbitMQ, all on this
machine's cores, at rising arrival rates.

    ELVES_LOCAL_PORT_OFFSET=... .venv/bin/python bench/rabbitmq_publish.py > bench/results/<date>-rabbitmq-publish.txt

Needs the local stack running at that offset (./deployments.sh --local); it makes a vhost of its
own with a quorum queue bound to an exchange and a user that may only write to the exchange, and
removes them after. Nothing consumes: the queue holds what was published until the vhost goes.
Per rate it prints one JSON line (bench/publish_rates.py: the messages confirmed per second, the
CPU seconds the publisher and the broker used per 1,000, the load average before and after),
then the highest rate held.

Settings (environment): RABBITMQ_BENCH_RATES (messages/s, default 250,500,1000,2000),
RABBITMQ_BENCH_SECONDS per rate (default 20). Needs tools/install-k6.sh.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
import tempfile
from pathlib import Path

import pika
import requests

sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).parents[1] / "tools" / "lib")]
from polling import wait_for  # noqa: E402 - tools/lib, the one way to wait
from publish_rates import K6, run_rates  # noqa: E402 - the publish benches' one stepper

from elves.data_plane import BROKER_USERS, HARNESS  # noqa: E402
from elves.local import infra  # noqa: E402
from elves.local.layout import Layout  # noqa: E402
from elves.local.ports import HOST, Ports  # noqa: E402
from elves.local.processes import run_command  # noqa: E402
from elves.local.settings import Settings  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "loadtests" / "examples" / "own-system-rabbitmq" / "orders.js"
RATES = [int(r) for r in os.environ.get("RABBITMQ_BENCH_RATES", "250,500,1000,2000").split(",")]
SECONDS = int(os.environ.get("RABBITMQ_BENCH_SECONDS", "20"))
HEADER = "X-Test-Id"
VHOST, EXCHANGE, KEY, QUEUE, USER = "bench-publish", "orders", "placed", "orders.placed", "bench-publisher"
CTL_TIMEOUT_SECONDS = 60.0


def ctl(rabbitmq: infra.RabbitMQ, *args: str, stdin: str | None = None) -> None:
    argv = [str(infra.RABBITMQ_BIN / "rabbitmqctl"), "-n", infra.RABBITMQ_NODE, *args]
    code, output = asyncio.run(run_command(argv, CTL_TIMEOUT_SECONDS, env=rabbitmq.env(), user=rabbitmq.os_user,
                                           stdin=stdin))
    if code != 0:
        sys.exit(f"rabbitmq-publish: rabbitmqctl {args[0]} failed: {output.strip()}")


def provision(rabbitmq: infra.RabbitMQ, layout: Layout, ports: Ports, password: str) -> None:
    """The vhost, the write-only user (its password on stdin) and the queue bound to the exchange."""
    ctl(rabbitmq, "add_vhost", VHOST)
    ctl(rabbitmq, "add_user", USER, stdin=password)
    ctl(rabbitmq, "set_permissions", "-p", VHOST, USER, "^$", f"^{EXCHANGE}$", "^$")
    harness = BROKER_USERS[HARNESS]
    ctl(rabbitmq, "set_permissions", "-p", VHOST, harness.name, ".*", ".*", ".*")
    credentials = pika.PlainCredentials(harness.name, layout.secret(harness.secret()))
    with pika.BlockingConnection(pika.ConnectionParameters(host=HOST, port=ports.amqp, virtual_host=VHOST,
                                                           credentials=credentials)) as connection:
        channel = connection.channel()
        channel.exchange_declare(EXCHANGE, "direct", durable=True)
        channel.queue_declare(QUEUE, durable=True, arguments={"x-queue-type": "quorum"})
        channel.queue_bind(QUEUE, EXCHANGE, KEY)


def main() -> None:
    if not K6.exists():
        sys.exit("rabbitmq-publish: needs k6 (tools/install-k6.sh)")
    settings = Settings.from_env()
    ports, layout = Ports(settings.port_offset), Layout(settings.state_dir)
    rabbitmq = infra.RabbitMQ("rabbitmq", layout, ports)
    broker_pid = int((layout.rabbitmq / "rabbitmq.pid").read_text().strip())
    with tempfile.TemporaryDirectory(prefix="rabbitmq-publish-") as tmp:
        work = Path(tmp)
        password_file = work / "password"
        password_file.touch(mode=0o600)
        password_file.write_text(secrets.token_urlsafe(24))
        try:
            provision(rabbitmq, layout, ports, password_file.read_text())
            listen = f"{HOST}:{ports.rabbitmq_publish}"
            with open(work / "publish.log", "ab") as log:
                publisher = subprocess.Popen(
                    [sys.executable, "-m", "elves.rabbitmq.publish", "--amqp", f"{HOST}:{ports.amqp}", "--vhost", VHOST,
                     "--user", USER, "--password-file", str(password_file), "--listen", listen, "--header", HEADER],
                    stdout=log, stderr=subprocess.STDOUT)
            try:
                url = f"http://{listen}"
                wait_for(lambda: requests.post(f"{url}/exchanges/{EXCHANGE}/{KEY}", data=b"{}", headers={HEADER: "warm"},
                                               timeout=15).status_code == 200,
                         "the publisher confirming a first message", 60, ignore=(requests.RequestException,))
                print(f"# the local stack's RabbitMQ, a quorum queue, {SECONDS} s per rate, {os.cpu_count()} cores",
                      flush=True)
                run_rates(RATES, SECONDS, SCRIPT, {"RABBITMQ_PUBLISH_URL": url, "RABBITMQ_EXCHANGE": EXCHANGE,
                                                   "RABBITMQ_ROUTING_KEY": KEY},
                          work, {"publisher": publisher.pid, "broker": broker_pid})
            finally:
                publisher.terminate()
                publisher.wait(timeout=10)
        finally:
            ctl(rabbitmq, "delete_user", USER)
            ctl(rabbitmq, "delete_vhost", VHOST)


if __name__ == "__main__":
    main()
