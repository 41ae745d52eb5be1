"""Elves' small HTTP doors, on the standard library's server: the Kafka lag reader, and the
publishers an unmodified k6 posts load to (elves.kafka.publish, elves.rabbitmq.publish). One way
to answer, one way to read and serve their --listen address, and one shape for both publishers:
POST a message's body to a path naming where it goes, the test id in a header the
SystemUnderTest names; 200 only once the broker confirmed it, so k6's 2xx are the accepted."""

from __future__ import annotations

import argparse
import json
import logging
import re
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

log = logging.getLogger(__name__)


class Door(BaseHTTPRequestHandler):
    """A handler that answers with a whole body, and logs no line per request (a load's worth)."""

    def answer(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        """No access log."""


def serve(parser: argparse.ArgumentParser, listen: str, door: type[Door], ready: str) -> None:
    """Serve `door` on `listen` (HOST:PORT, refused naming the flag otherwise) until stopped, one
    thread per connection; print `ready` once listening."""
    host, _, port = listen.rpartition(":")
    if not host or not port.isdigit():
        parser.error(f"--listen {listen!r}: expected HOST:PORT, e.g. 127.0.0.1:9308")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    server = ThreadingHTTPServer((host, int(port)), door)
    server.daemon_threads = True
    print(ready, flush=True)
    server.serve_forever()


class Refused(Exception):
    """A message the broker will not take as asked (e.g. routed to no queue): a 400 naming why."""


class NotConfirmed(Exception):
    """The broker did not confirm the message in time, or could not be reached: a 503."""


# What a publisher's door does with one request: where (the path's match), the body, the test id;
# returns what to answer once the broker confirmed (where the message went).
Send = Callable[[re.Match, bytes, str, dict[str, str]], dict]


def publish_door(path: re.Pattern, usage: str, send: Send, test_id_header: str, max_body_bytes: int) -> type[Door]:
    """A door that publishes each POST to a path matching `path` with `send`, the request's
    `test_id_header` required and passed on as the message's header of that name.

    -> 200 {where it went} once confirmed; 404 for another path (naming `usage`); 400 for a
       request it cannot publish (naming what is wrong); 503 when the broker did not confirm."""

    class Handler(Door):
        protocol_version = "HTTP/1.1"  # keep-alive: k6's VUs reuse their connections

        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(min(length, max_body_bytes + 1))
            match = path.match(self.path)
            if match is None:
                self._answer(404, {"error": f"{self.path}: publish with {usage}"})
                return
            if length > max_body_bytes:
                self._answer(400, {"error": f"the body has {length} bytes; a message holds {max_body_bytes} at most"})
                return
            test_id = self.headers.get(test_id_header)
            if not test_id:
                self._answer(400, {"error": f"no {test_id_header} header: the test id travels in it"})
                return
            try:
                written = send(match, body, test_id, dict(self.headers.items()))
            except Refused as error:
                self._answer(400, {"error": str(error)})
                return
            except NotConfirmed as error:
                log.warning("publishing to %s failed: %s", self.path, error)
                self._answer(503, {"error": f"the broker did not confirm the message: {error}"})
                return
            self._answer(200, written)

        def _answer(self, status: int, body: dict) -> None:
            self.answer(status, json.dumps(body).encode(), "application/json")

    return Handler
