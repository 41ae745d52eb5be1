"""Load published into a RabbitMQ exchange or queue by an unmodified k6: an HTTP door of Elves'
own in front of the broker, the same shape as the Kafka one (elves.door.publish_door). k6 stays
the load generator (the plan, stages, sweeps and the open model's arrival rate are its
scenarios, as for HTTP load), each iteration one POST here; the answer comes once the broker
has confirmed the message (publisher confirms, mandatory: routed to a queue), so k6's 2xx of
the endpoint are exactly the messages the broker accepted (the ledger's `accepted: {endpoint: ...}`).

    POST /exchanges/<exchange>/<routing key>   (path segments URL-encoded; the key may be empty)
    POST /queues/<queue>                       the default exchange, straight into the queue
         body = the message's body; the request's test-id header (named by --header, the
         SystemUnderTest's testIdHeader) becomes a message header of the same name; its
         Content-Type the message's content type; an optional X-Message-Id its message id (a
         fresh UUID otherwise, the key an idempotent consumer stores by). Persistent messages.
    -> 200 {"exchange", "routingKey", "messageId"} once confirmed; 400 for a message the broker
       refuses (routed to no queue, no such exchange, no permission: naming which); 503 when
       the broker cannot be reached, nacks it, blocks publishers for 10 s (an alarm) or stops
       answering for two heartbeats while the confirm is awaited (20 s by default).

The user needs no tag and only write permission on the exchange (the default exchange's is
the queue's name); its password is read from a file (a mounted Secret), never from the command line.

    python -m elves.rabbitmq.publish --amqp 127.0.0.1:5672 --vhost / --user orders-publisher \\
        --password-file /secrets/password --listen 127.0.0.1:8093 --header X-Test-Id
"""

from __future__ import annotations

import argparse
import queue
import re
import threading
import uuid
from pathlib import Path
from urllib.parse import unquote

import pika
from pika.exceptions import AMQPChannelError, AMQPConnectionError, NackError, UnroutableError

from elves.door import NotConfirmed, Refused, publish_door, serve

PATH = re.compile(r"^/(?:exchanges/(?P<exchange>[^/?#]+)/(?P<key>[^/?#]*)|queues/(?P<queue>[^/?#]+))$")
USAGE = "POST /exchanges/<exchange>/<routing key> or POST /queues/<queue>"
MESSAGE_ID_HEADER = "X-Message-Id"
MAX_BODY_BYTES = 16_000_000  # RabbitMQ's default largest message (max_message_size) is 16 MiB
# How long one request waits for a free channel, and for a broker that blocks publishers (a
# memory or disk alarm), before it answers 503: longer than a healthy broker ever takes here,
# short enough that k6 (60 s timeout) sees the failure as a failure. A broker that stops
# answering while a confirm is awaited is given up after two heartbeats (pika's blocking
# publish has no deadline of its own).
CONFIRM_TIMEOUT_SECONDS = 10.0
# A dead broker is noticed within two of these even while no message is published (--heartbeat).
DEFAULT_HEARTBEAT_SECONDS = 10
# Messages in flight at once, each on a connection of its own: see Channels.
DEFAULT_CHANNELS = 16


class Channel:
    """One confirming channel on a connection of its own (pika's connection is not for threads:
    one publish at a time on it); opened at its first message and again after a failure, so a
    broker that is not up yet is a 503, not a publisher that never starts."""

    def __init__(self, parameters: pika.ConnectionParameters):
        self.parameters = parameters
        self.connection: pika.BlockingConnection | None = None
        self.channel = None

    def publish(self, exchange: str, key: str, body: bytes, properties: pika.BasicProperties) -> None:
        """Returns once the broker confirmed the message routed; Refused or NotConfirmed otherwise."""
        try:
            channel = self._open()
            channel.basic_publish(exchange, key, body, properties, mandatory=True)
        except UnroutableError:
            raise Refused(f"the broker routed it to no queue: exchange {exchange!r} has no binding "
                          f"for routing key {key!r}") from None
        except NackError:
            raise NotConfirmed("the broker refused it (nack): a queue's length limit or an alarm?") from None
        except AMQPChannelError as error:  # e.g. 404 no such exchange, 403 no write permission
            self.channel = None
            raise Refused(f"the broker closed the channel: {error}") from None
        except AMQPConnectionError as error:
            self._close()
            raise NotConfirmed(f"{type(error).__name__}: {error}") from None

    def serve_heartbeats(self) -> None:
        """Let an idle connection answer the broker's heartbeats (a blocking connection does so only
        while it is used): a connection idle for two heartbeats is closed by the broker, and the
        next message on it would fail. A connection found gone is opened again by the next publish."""
        if self.connection is None or not self.connection.is_open:
            return
        try:
            self.connection.process_data_events(time_limit=0)
        except AMQPConnectionError:
            self._close()

    def _open(self):
        if self.connection is None or not self.connection.is_open:
            self.connection = pika.BlockingConnection(self.parameters)
            self.channel = None
        if self.channel is None or not self.channel.is_open:
            self.channel = self.connection.channel()
            self.channel.confirm_delivery()
        return self.channel

    def _close(self) -> None:
        try:
            if self.connection is not None and self.connection.is_open:
                self.connection.close()
        except AMQPConnectionError:
            pass  # already gone: nothing to close
        self.connection = self.channel = None


class Channels:
    """A pool of channels, each lent to one request at a time: a publish waits for its confirm (a
    quorum queue's takes a disk write, a few ms), so one channel holds only a few hundred
    messages a second; several in flight hold more."""

    def __init__(self, parameters: pika.ConnectionParameters, size: int):
        self.idle: queue.Queue[Channel] = queue.Queue()
        for _ in range(size):
            self.idle.put(Channel(parameters))
        threading.Thread(target=self._keep_alive, args=(parameters.heartbeat,), name="heartbeats", daemon=True).start()

    def _keep_alive(self, heartbeat: int) -> None:
        """For the life of the process: twice per heartbeat interval, the idle channels' connections
        serve their heartbeats (a channel in use is serving its own, waiting for its confirm)."""
        never = threading.Event()
        while not never.wait(heartbeat / 2):
            taken: list[Channel] = []
            while True:
                try:
                    taken.append(self.idle.get_nowait())
                except queue.Empty:
                    break
            try:
                for channel in taken:
                    channel.serve_heartbeats()
            finally:
                for channel in taken:
                    self.idle.put(channel)

    def publish(self, exchange: str, key: str, body: bytes, properties: pika.BasicProperties) -> None:
        try:
            channel = self.idle.get(timeout=CONFIRM_TIMEOUT_SECONDS)
        except queue.Empty:
            raise NotConfirmed(f"no channel free within {CONFIRM_TIMEOUT_SECONDS:g} s") from None
        try:
            channel.publish(exchange, key, body, properties)
        finally:
            self.idle.put(channel)


def destination(match: re.Match) -> tuple[str, str]:
    """(exchange, routing key) of a request path: a queue is the default exchange and its name."""
    if match["queue"] is not None:
        return "", unquote(match["queue"])
    return unquote(match["exchange"]), unquote(match["key"])


def handler(channels: Channels, test_id_header: str):
    def send(match: re.Match, body: bytes, test_id: str, headers: dict[str, str]) -> dict:
        exchange, key = destination(match)
        message_id = headers.get(MESSAGE_ID_HEADER) or str(uuid.uuid4())
        properties = pika.BasicProperties(content_type=headers.get("Content-Type"), delivery_mode=2,
                                          message_id=message_id, headers={test_id_header: test_id})
        channels.publish(exchange, key, body, properties)
        return {"exchange": exchange, "routingKey": key, "messageId": message_id}

    return publish_door(PATH, USAGE, send, test_id_header, MAX_BODY_BYTES)


def parameters(parser: argparse.ArgumentParser, args: argparse.Namespace) -> pika.ConnectionParameters:
    host, _, port = args.amqp.rpartition(":")
    if not host or not port.isdigit():
        parser.error(f"--amqp {args.amqp!r}: expected HOST:PORT, e.g. 127.0.0.1:5672")
    try:
        password = Path(args.password_file).read_text().strip()
    except OSError as error:
        parser.error(f"--password-file {args.password_file}: {error.strerror}")
    if not password:
        parser.error(f"--password-file {args.password_file}: the file is empty")
    return pika.ConnectionParameters(
        host=host, port=int(port), virtual_host=args.vhost, credentials=pika.PlainCredentials(args.user, password),
        heartbeat=args.heartbeat, socket_timeout=CONFIRM_TIMEOUT_SECONDS,
        blocked_connection_timeout=CONFIRM_TIMEOUT_SECONDS, client_properties={"connection_name": "elves-publish"})


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m elves.rabbitmq.publish", description=__doc__.splitlines()[0])
    parser.add_argument("--amqp", required=True, help="the broker's AMQP listener, HOST:PORT")
    parser.add_argument("--vhost", default="/", help="the virtual host of the exchange or queue")
    parser.add_argument("--user", required=True, help="a user with write permission on the exchange")
    parser.add_argument("--password-file", required=True, help="a file holding the user's password (a mounted Secret)")
    parser.add_argument("--listen", required=True, help="where k6 posts, HOST:PORT")
    parser.add_argument("--header", required=True, help="the SystemUnderTest's testIdHeader, e.g. X-Test-Id")
    parser.add_argument("--channels", type=int, default=DEFAULT_CHANNELS,
                        help=f"messages in flight at once, each on a connection of its own (default {DEFAULT_CHANNELS})")
    parser.add_argument("--heartbeat", type=int, default=DEFAULT_HEARTBEAT_SECONDS,
                        help=f"AMQP heartbeat seconds (default {DEFAULT_HEARTBEAT_SECONDS}): a dead broker is noticed within two")
    args = parser.parse_args(argv)
    if not 1 <= args.channels <= 256:
        parser.error(f"--channels {args.channels}: between 1 and 256")
    if not 1 <= args.heartbeat <= 600:
        parser.error(f"--heartbeat {args.heartbeat}: between 1 and 600 seconds")
    channels = Channels(parameters(parser, args), args.channels)
    serve(parser, args.listen, handler(channels, args.header),
          f"ready: {USAGE} at http://{args.listen} publishes to {args.amqp} vhost {args.vhost}")


if __name__ == "__main__":
    main()
