"""A small event-driven system that is not Elves, for tier 2's own-system test: an orders API
that queues each order it accepts (202) and a worker that stores them more slowly than the load
places them, so a backlog builds and must drain. Its /metrics gives the queue's depth and the
orders stored per test id, what its SystemUnderTest's drain and ledger read
(loadtests/examples/own-system/orders.yaml describes the same system on a cluster).

    python own_system_orders.py PORT STORE_PER_SECOND

Listens on 127.0.0.1 only; prints "ready" once it does.
"""

from __future__ import annotations

import collections
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

QUEUE = "orders.in"


class Orders:
    def __init__(self, store_per_second: float):
        self.queue: collections.deque[str] = collections.deque()
        self.saved: collections.Counter[str] = collections.Counter()
        self.lock = threading.Lock()
        self.pause = 1.0 / store_per_second

    def accept(self, test_id: str) -> None:
        with self.lock:
            self.queue.append(test_id)

    def work(self) -> None:
        """The worker: stores one order per pause, in the order they came."""
        while True:
            with self.lock:
                test_id = self.queue.popleft() if self.queue else None
                if test_id is not None:
                    self.saved[test_id] += 1
            time.sleep(self.pause)

    def metrics(self) -> str:
        with self.lock:
            lines = [f'orders_queue_depth{{queue="{QUEUE}"}} {len(self.queue)}']
            lines += [f'orders_saved_total{{test_id="{test_id}"}} {count}' for test_id, count in self.saved.items()]
        return "\n".join(lines) + "\n"


def handler(orders: Orders) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path != "/orders":
                self._answer(404, "")
                return
            orders.accept(self.headers.get("X-Test-Id") or "")
            self._answer(202, "")

        def do_GET(self) -> None:  # noqa: N802
            if self.path == "/metrics":
                self._answer(200, orders.metrics())
            else:
                self._answer(404, "")

        def _answer(self, status: int, body: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body.encode())))
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args: object) -> None:
            pass

    return Handler


def main(port: int, store_per_second: float) -> None:
    orders = Orders(store_per_second)
    threading.Thread(target=orders.work, daemon=True).start()
    server = ThreadingHTTPServer(("127.0.0.1", port), handler(orders))
    server.daemon_threads = True
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(int(sys.argv[1]), float(sys.argv[2]))
