"""A stand-in for a Spring service replica: answers readiness and metrics like one.

The supervisor's tests run it instead of `java -jar` (ELVES_LOCAL_SERVICE_COMMAND), so
they exercise real processes, ports and signals without the Java build.
"""

import os
import signal
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from threading import Thread


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.startswith("/exit/"):
            # Die with a chosen code, as the JVM does on OutOfMemoryError (3).
            os._exit(int(self.path.rsplit("/", 1)[1]))
        if self.path == "/actuator/health/readiness":
            body = b'{"status":"UP"}'
        elif self.path == "/actuator/prometheus":
            body = b"standin_up 1\n"
        else:
            body = f'{{"pod":"{os.environ.get("HOSTNAME", "")}"}}'.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main() -> None:
    ports = {int(os.environ["SERVER_PORT"]), int(os.environ["MANAGEMENT_SERVER_PORT"])}
    servers = [ThreadingHTTPServer(("127.0.0.1", port), Handler) for port in ports]
    for server in servers[1:]:
        Thread(target=server.serve_forever, daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    servers[0].serve_forever()


if __name__ == "__main__":
    main()
