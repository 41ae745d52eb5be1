"""The registry's activity-log consumer capacity: publish N activity logs straight to
elves.registry.applog.in (as fast as publisher confirms allow), then watch the registry's
elves_registry_logs_persisted_total until all N are stored. Prints one line of figures.
Also `depth QUEUE...`: the ready messages of queues (for the bench's backlog notes).

Used by bench/services.sh; needs pika (.venv: pip install -e 'operator[test]')."""

from __future__ import annotations

import argparse
import datetime
import json
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
POLL_SECONDS = 0.5


def connect(args) -> pika.BlockingConnection:
    credentials = pika.PlainCredentials(args.user, args.password)
    return pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", args.port, credentials=credentials,
                                                             connection_attempts=1, socket_timeout=5))


def persisted(metrics_url: str) -> float:
    with urllib.request.urlopen(metrics_url, timeout=5) as answer:
        text = answer.read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(PERSISTED + "{") or line.startswith(PERSISTED + " "))


def drain(args) -> None:
    test_id = f"bench/drain/{uuid.uuid4()}"
    before = persisted(args.metrics)
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
    deadline = published + args.timeout
    stored = persisted(args.metrics) - before
    while stored < args.count:
        if time.monotonic() > deadline:
            sys.exit(f"bench: the registry stored {stored:.0f} of {args.count} logs within {args.timeout} s "
                     f"after publishing (is it running and consuming {APPLOG}?)")
        time.sleep(POLL_SECONDS)
        stored = persisted(args.metrics) - before
    done = time.monotonic()
    kept_up = (done - published) < 2 * POLL_SECONDS
    print(f"{args.count / (done - started):.0f} logs persisted per second ({args.count} in {done - started:.1f} s; "
          f"publishing took {published - started:.1f} s"
          + ("; the consumer kept up with publishing, so this is a lower bound)" if kept_up else ")"))


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
    drain_parser.add_argument("--count", type=int, default=20000)
    drain_parser.add_argument("--timeout", type=float, default=300)
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
