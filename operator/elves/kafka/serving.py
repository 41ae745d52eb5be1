"""What the lag reader and the publisher share as small HTTP servers of the standard library:
one way to answer, and one way to read and serve their --listen address."""

from __future__ import annotations

import argparse
import logging
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


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
