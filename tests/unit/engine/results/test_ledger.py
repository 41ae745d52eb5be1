"""Reading the registry's ledger: an answer that says "not now" is told apart from one that
says "never" (a tier-2 wait keeps polling through the first, the second fails at once)."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from engine_testkit import free_port

from elves.engine.results.ledger import SERVICE_KEY_HEADER, LedgerError, LedgerUnavailable, read_ledger


@pytest.fixture
def registry():
    """A real HTTP server answering the ledger path with the status set in `answer[0]`."""
    answer = [200]

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            status = answer[0] if self.headers.get(SERVICE_KEY_HEADER) == "key" else 401
            body = b'{"requests": 1}' if status == 200 else b"no"
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", answer
    server.shutdown()
    server.server_close()


def test_the_ledger_is_the_registrys_answer(registry):
    url, _ = registry
    assert read_ledger(url, "t1", "key") == {"requests": 1}


@pytest.mark.parametrize("status", [502, 503, 504])
def test_a_registry_that_cannot_answer_now_is_unavailable(registry, status):
    url, answer = registry
    answer[0] = status
    with pytest.raises(LedgerUnavailable, match=f"HTTP {status}"):
        read_ledger(url, "t1", "key")


def test_a_refused_answer_is_an_error_but_not_unavailable(registry):
    url, _ = registry
    with pytest.raises(LedgerError, match="HTTP 401") as raised:
        read_ledger(url, "t1", "wrong key")
    assert not isinstance(raised.value, LedgerUnavailable)


def test_a_port_nobody_listens_on_is_unavailable():
    with pytest.raises(LedgerUnavailable, match="unreachable"):  # a free port: connections are refused
        read_ledger(f"http://127.0.0.1:{free_port()}", "t1", "key", timeout=2)
