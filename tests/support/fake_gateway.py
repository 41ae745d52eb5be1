#!/usr/bin/env python3
"""A stand-in for the gateway and the registry, to try the k6 scenarios without the system.

It answers the paths of DESIGN.md the way the real services do (202 with an id, a status
that turns DONE after a moment, a PNG, history pages, 401 without a bearer token, 404 for
unknown ids), and counts what it was sent, by endpoint and test id, at GET /_fake/counts.
It is no model of the system's performance: it exists to check the scripts and the series
k6 writes, nothing more. A fixture of the tests (the k6 scripts' and the operator's), and a
way to try a script by hand.

    python3 tests/support/fake_gateway.py --port 18999
    ELVES_BASE_URL=http://127.0.0.1:18999 ELVES_REGISTRY_URL=http://127.0.0.1:18999 \
      ELVES_TOKENS=a,b k6 run loadtests/scenarios/system-mix.js
"""

from __future__ import annotations

import argparse
import json
import re
import struct
import threading
import time
import uuid
import zlib
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

TEST_ID_HEADER = "X-Elves-Test-Id"
# How long a fake plot takes from 202 to DONE.
PLOT_SECONDS = 0.5
# Like the real registry, which records a request from the queue a moment after the 202:
# until then getStatus and getImage answer 404.
KNOWN_AFTER_SECONDS = 0.1


def tiny_png() -> bytes:
    """A valid 1x1 grey PNG, so the scripts' signature check sees the real thing."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(b"\x00\x80")) + chunk(b"IEND", b""))


PNG = tiny_png()


class FakeState:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: dict[str, tuple[str, float]] = {}  # id -> (user token, accepted at)
        self.history: dict[str, list[dict]] = {}  # token -> activities, newest last
        self.counts: Counter[str] = Counter()  # "endpoint status testid" -> n
        self.unauthenticated = 0

    def count(self, endpoint: str, status: int, test_id: str) -> None:
        with self.lock:
            self.counts[f"{endpoint} {status} {test_id}"] += 1


ROUTES = [
    ("POST", r"/api/v1/data", "getData"),
    ("GET", r"/api/v1/status/(?P<id>[^/]+)", "getStatus"),
    ("GET", r"/api/v1/plots/(?P<id>[^/]+)", "getImage"),
    ("GET", r"/api/v1/history", "getHistory"),
    ("GET", r"/api/v1/users/me", "getUser"),
    ("GET", r"/api/v1/users", "getAllUsers"),
    ("POST", r"/api/v1/logs", "addAppLog"),
    ("GET", r"/api/v1/logs", "getAppLog"),
    ("GET", r"/api/v1/users/(?P<id>[^/]+)", "getUser"),
]


def make_handler(state: FakeState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # keep the test output quiet
            pass

        def _send(self, status: int, body: bytes | dict | list, content_type: str = "application/json") -> None:
            payload = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _route(self, method: str) -> None:
            url = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            if url.path == "/_fake/counts":
                with state.lock:
                    self._send(200, {"counts": dict(state.counts), "unauthenticated": state.unauthenticated})
                return
            for route_method, pattern, endpoint in ROUTES:
                match = re.fullmatch(pattern, url.path)
                if match and route_method == method:
                    break
            else:
                self._send(404, {"error": f"no route {method} {url.path}"})
                return
            query = parse_qs(url.query)
            if endpoint == "getHistory" and query.get("all") == ["true"]:
                endpoint = "getAllHistory"
            test_id = self.headers.get(TEST_ID_HEADER, "")
            auth = self.headers.get("Authorization", "")
            if not auth.startswith("Bearer ") or len(auth) <= len("Bearer "):
                with state.lock:
                    state.unauthenticated += 1
                state.count(endpoint, 401, test_id)
                self._send(401, {"error": "missing bearer token"})
                return
            token = auth[len("Bearer "):]
            status, answer, content_type = self._answer(endpoint, match, token, body)
            state.count(endpoint, status, test_id)
            if 200 <= status < 300 and endpoint not in ("addAppLog", "getAppLog"):
                with state.lock:
                    request_id = (answer.get("id") if endpoint == "getData"
                                  else match.groupdict().get("id") if endpoint in ("getStatus", "getImage")
                                  else None)
                    state.history.setdefault(token, []).append(
                        {"endpoint": endpoint, "requestId": request_id, "time": time.time()})
            self._send(status, answer, content_type)

        def _answer(self, endpoint: str, match: re.Match, token: str, body: bytes):
            now = time.time()
            if endpoint == "getData":
                try:
                    request = json.loads(body)
                    missing = [f for f in ("radar", "date", "start", "end") if not request.get(f)]
                except ValueError:
                    missing = ["body"]
                if missing:
                    return 400, {"error": f"missing field {missing[0]}"}, "application/json"
                request_id = str(uuid.uuid4())
                with state.lock:
                    state.requests[request_id] = (token, now)
                return 202, {"id": request_id}, "application/json"
            if endpoint in ("getStatus", "getImage"):
                with state.lock:
                    known = state.requests.get(match.group("id"))
                age = now - known[1] if known else 0.0
                if known is None or known[0] != token or age < KNOWN_AFTER_SECONDS:
                    return 404, {"error": "request not known (yet)"}, "application/json"
                status = "DONE" if age >= PLOT_SECONDS else "PROCESSING" if age >= PLOT_SECONDS / 2 else "QUEUED"
                if endpoint == "getStatus":
                    return 200, {"id": match.group("id"), "status": status}, "application/json"
                if status != "DONE":
                    return 404, {"error": "no plot yet"}, "application/json"
                return 200, PNG, "image/png"
            if endpoint in ("getHistory", "getAllHistory"):
                with state.lock:
                    items = list(reversed(state.history.get(token, [])))
                if endpoint == "getHistory":
                    return 200, items[:20], "application/json"
                return 200, {"items": items, "page": 0, "total": len(items)}, "application/json"
            if endpoint == "getUser":
                return 200, {"id": "me", "requests": 0}, "application/json"
            if endpoint == "getAllUsers":
                return 200, [{"id": "me"}], "application/json"
            if endpoint == "addAppLog":
                return 201, {"id": str(uuid.uuid4())}, "application/json"
            return 200, [], "application/json"  # getAppLog

        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            self._route("GET")

        def do_POST(self) -> None:  # noqa: N802
            self._route("POST")

    return Handler


def serve(port: int, host: str = "127.0.0.1") -> tuple[ThreadingHTTPServer, FakeState]:
    """Start the fake on host:port (0: a free port) in a daemon thread."""
    state = FakeState()
    server = ThreadingHTTPServer((host, port), make_handler(state))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="fake-gateway", daemon=True).start()
    return server, state


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    args = parser.parse_args()
    server, _ = serve(args.port)
    print(f"fake gateway and registry on http://127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.shutdown()


if __name__ == "__main__":
    main()
