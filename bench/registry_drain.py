"""The registry's activity-log consumer capacity: publish N activity logs straight to
elves.registry.applog.in, then watch the registry's elves_registry_logs_persisted_total until
all N are stored. Prints one line of figures.

With --freeze SUPERVISOR_URL (the local mode's control API) the registry is frozen (SIGSTOP)
while the logs are published and thawed after, so the figure is the consumer draining a
backlog; without it the consumer races the publisher and the figure may be the publisher's.
Also `depth QUEUE...`: the ready messages of queues (for the bench's backlog notes).

Used by bench/services.sh; needs pika (.venv: pip install -e 'operator[test]')."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
import urllib.request
import uuid

try:
    import pika
except ImportError:
    sys.exit("bench: pika is missing: .venv/bin/pip install -e 'operator[test]'")

APPLOG = "elves.registry.applog.in"
PERSISTED = "elves_registry_logs_persisted_total"
POLL_SECONDS = 0.2
# The supervisor thaws a frozen registry by itself after this long, whatever happens here.
FREEZE_LIMIT_SECONDS = 120


def connect(args) -> pika.BlockingConnection:
    credentials = pika.PlainCredentials(args.user, args.password)
    return pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", args.port, credentials=credentials,
                                                             connection_attempts=1, socket_timeout=5))


def persisted(metrics_url: str) -> float:
    with urllib.request.urlopen(metrics_url, timeout=5) as answer:
        text = answer.read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(PERSISTED + "{") or line.startswith(PERSISTED + " "))


def signal_registry(supervisor: str, signal: str) -> None:
    body = {"deployment": "registry", "signal": signal}
    if signal == "SIGSTOP":
        body["resumeAfterSeconds"] = FREEZE_LIMIT_SECONDS  # thawed even if this script dies
    # The control API's credential (.elves/secrets/control-token), from the environment.
    token = os.environ.get("ELVES_CONTROL_TOKEN", "")
    request = urllib.request.Request(f"{supervisor}/signal", json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=10):
        pass


def drain(args) -> None:
    test_id = f"bench/drain/{uuid.uuid4()}"
    before = persisted(args.metrics)
    if args.freeze:
        signal_registry(args.freeze, "SIGSTOP")
    try:
        started, published = publish(args, test_id)
    finally:
        if args.freeze:
            signal_registry(args.freeze, "SIGCONT")
    # Frozen, the consumer's clock starts when it is thawed; else when publishing started.
    consuming_since = time.monotonic() if args.freeze else started
    deadline = published + args.timeout
    stored = persisted(args.metrics) - before
    while stored < args.count:
        if time.monotonic() > deadline:
            sys.exit(f"bench: the registry stored {stored:.0f} of {args.count} logs within {args.timeout} s "
                     f"after publishing (is it running and consuming {APPLOG}?)")
        time.sleep(POLL_SECONDS)
        stored = persisted(args.metrics) - before
    done = time.monotonic()
    took = done - consuming_since
    if args.freeze:
        note = f"a backlog of {args.count} drained in {took:.1f} s after a thaw"
    else:
        note = f"{args.count} in {took:.1f} s while publishing"
        if done - published < 2 * POLL_SECONDS:
            note += "; the consumer kept up with the publisher, so this is a lower bound"
    print(f"{args.count / took:.0f} logs persisted per second ({note}; publishing took {published - started:.1f} s)")


def publish(args, test_id: str) -> tuple[float, float]:
    """Publishes the logs; returns when publishing started and ended (monotonic seconds)."""
    connection = connect(args)
    channel = connection.channel()
    # No publisher confirms: waiting for each would make publishing, not the consumer, the
    # bottleneck. A message the broker lost shows as a count that never arrives (timeout).
    started = time.monotonic()
    for _ in range(args.count):
        message_id = str(uuid.uuid4())
        envelope = {"id": message_id, "type": "activity.logged", "userId": "bench-drain", "testId": test_id,
                    "time": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                    "data": {"endpoint": "getHistory"}}
        channel.basic_publish("", APPLOG, json.dumps(envelope).encode(),
                              pika.BasicProperties(content_type="application/json", delivery_mode=2,
                                                   message_id=message_id, type="activity.logged"))
    published = time.monotonic()
    connection.close()
    return started, published


def depth(args) -> None:
    connection = connect(args)
    channel = connection.channel()
    for queue in args.queues:
        print(queue, channel.queue_declare(queue, passive=True).method.message_count)
    connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--password", required=True)
    commands = parser.add_subparsers(dest="command", required=True)
    drain_parser = commands.add_parser("drain")
    drain_parser.add_argument("--metrics", required=True, help="the registry's /actuator/prometheus URL")
    drain_parser.add_argument("--count", type=int, default=100000)
    drain_parser.add_argument("--timeout", type=float, default=300)
    drain_parser.add_argument("--freeze", metavar="SUPERVISOR_URL",
                              help="freeze the registry while publishing (local mode's control API)")
    depth_parser = commands.add_parser("depth")
    depth_parser.add_argument("queues", nargs="+")
    args = parser.parse_args()
    try:
        drain(args) if args.command == "drain" else depth(args)
    except pika.exceptions.AMQPError as error:
        sys.exit(f"bench: broker at 127.0.0.1:{args.port} as {args.user}: {error!r}")
    except OSError as error:
        sys.exit(f"bench: {error}")


if __name__ == "__main__":
    main()
