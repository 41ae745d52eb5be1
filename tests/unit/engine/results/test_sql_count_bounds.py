"""What one SQL call (a SystemUnderTest's count or its reset, elves.engine.results.sql_count) may cost the
operator, whatever the query, the statements or the server do: against a real
PostgreSQL 15, a 300 MB value is refused without the operator's memory growing, a query returning
many rows is refused after two, a reset step that returns rows is refused unrun, a reset that lifts
the statement timeout is cut at the call's deadline and its backend is gone; against a loopback
server that trickles a byte at a time, the call ends at its deadline and cancels; and the
server's error text (which may quote the query's data, or a password guess) never shows."""

from __future__ import annotations

import re
import socket
import struct
import threading
import time
from pathlib import Path

import pytest
from polling import wait_for
from postgres_server import PostgresServer

from elves.engine.results.sql_count import SqlCountError, SqlCountUnavailable, count, execute

DATABASE = "vault"
READER_PASSWORD = "reader-Pa55-w0rd"
WRITER_PASSWORD = "writer-Pa55-w0rd"
SECRET = "the-vault-secret-4711"
TEST_ID = "shop/orders/0"
RESET = "spec.reset.sql"
# The operator's memory may grow this much while a call refuses 300 MB (it grows by about 600
# MB reading it: the message, then its value as text).
MEMORY_GROWTH_LIMIT = 50 * 1024 * 1024


@pytest.fixture(scope="module")
def postgres():
    server = PostgresServer(DATABASE, tls=True)  # prefer, as the URLs here say: every read over TLS
    server.login_role("reader", READER_PASSWORD)
    server.login_role("writer", WRITER_PASSWORD)
    server.run("CREATE TABLE secrets (secret text); CREATE TABLE scratch (n int); GRANT SELECT ON secrets TO reader;"
               " GRANT SELECT, INSERT ON scratch TO writer", DATABASE)
    server.run("INSERT INTO secrets VALUES (:s)", DATABASE, s=SECRET)
    yield server
    server.stop()


def reader(postgres: PostgresServer, **parameters: str) -> str:
    return postgres.url("reader", READER_PASSWORD, DATABASE, **parameters)


def writer(postgres: PostgresServer, **parameters: str) -> str:
    return postgres.url("writer", WRITER_PASSWORD, DATABASE, **parameters)


def refused(error: type[SqlCountError], call, *args, **kwargs) -> str:
    with pytest.raises(error) as raised:
        call(*args, **kwargs)
    return str(raised.value)


def rss_bytes() -> int:
    status = Path("/proc/self/status").read_text()
    return int(re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE).group(1)) * 1024


def peak_growth(call) -> int:
    """How far this process's resident memory rose above its level before, while `call` ran
    (sampled every few milliseconds: a peak that passes in between is missed, a buffered 300 MB
    value is not)."""
    before, peak, done = rss_bytes(), [0], threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], rss_bytes())
            done.wait(0.002)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        call()
    finally:
        done.set()
        sampler.join(timeout=5)
    return max(peak[0], rss_bytes()) - before


@pytest.mark.parametrize("query", [
    "SELECT repeat(repeat('x', 10000), 30000) WHERE $TEST_ID::text IS NOT NULL",  # a row holding 300 MB
    # An error quoting a 100 MB value (the server writes it to its log too, hence not 300).
    "SELECT count(*) FROM secrets WHERE $TEST_ID::text IS NOT NULL AND repeat(repeat('x', 10000), 10000)::int = 1",
])
def test_a_300_mb_value_or_an_error_quoting_a_large_one_is_refused_unread(postgres, query):
    messages = []
    growth = peak_growth(lambda: messages.append(refused(SqlCountError, count, reader(postgres), query, TEST_ID)))
    assert growth < MEMORY_GROWTH_LIMIT, f"the operator's memory grew by {growth / 2**20:.0f} MiB"
    assert re.fullmatch(r"spec\.ledger\.persisted\.sql\.query: PostgreSQL at 127\.0\.0\.1:\d+/vault answered with a"
                        r" message of [13]000\d{5} bytes, more than the 8 KiB a count or a reset step needs: refused"
                        r" unread", messages[0]), messages[0]


def test_a_query_returning_many_rows_is_refused_after_reading_two(postgres):
    # The third row would divide by zero: the server stops after two, so it is never made.
    query = ("SELECT 1 / (3 - n) FROM generate_series(1, 3) AS n"
             " WHERE $TEST_ID::text IS NOT NULL")
    message = refused(SqlCountError, count, reader(postgres), query, TEST_ID)
    assert message == ("spec.ledger.persisted.sql.query: must return one row of one integer column;"
                       " it returned more than one row")
    # Fifty million rows (made one at a time, as a set-returning function in the select list is):
    # refused as fast as two.
    began = time.monotonic()
    refused(SqlCountError, count, reader(postgres), "SELECT generate_series(1, 50000000)"
            " WHERE $TEST_ID::text IS NOT NULL", TEST_ID)
    assert time.monotonic() - began < 3


def test_a_failing_query_shows_its_sqlstate_never_the_servers_message(postgres):
    """The server's message quotes the value it could not read: a secret of a table the reader may
    read, which would land in the LoadTest's status, its events and its report."""
    query = "SELECT count(*) FROM secrets WHERE secret::int = 1 AND $TEST_ID::text IS NOT NULL"
    message = refused(SqlCountError, count, reader(postgres), query, TEST_ID)
    assert message == (f"spec.ledger.persisted.sql.query: PostgreSQL at 127.0.0.1:{postgres.port}/{DATABASE} refused"
                       " it (SQLSTATE 22P02: a text that is not a value of its type)")
    reset = refused(SqlCountError, execute, writer(postgres), ["INSERT INTO scratch SELECT 1 / 0"], RESET)
    assert reset == (f"{RESET}.statements[0]: PostgreSQL at 127.0.0.1:{postgres.port}/{DATABASE} refused it"
                     " (SQLSTATE 22012: division by zero)")


def test_an_error_tells_nothing_about_a_password_guess(postgres):
    """A query that quotes a guess in its error: the message is the same whether the guess is the
    URL's password or not (replacing the password in the server's text told which)."""
    def message_for(guess: str) -> str:
        query = f"SELECT count(*) FROM secrets WHERE $TEST_ID::text IS NOT NULL AND '{guess}'::int = 1"
        return refused(SqlCountError, count, reader(postgres), query, TEST_ID)

    right, wrong = message_for(READER_PASSWORD), message_for("reader-Pa55-w0rX")
    assert right == wrong
    assert READER_PASSWORD not in right and "***" not in right


@pytest.mark.parametrize("statement", [
    "SELECT pg_sleep(60)",
    "INSERT INTO scratch VALUES (7) RETURNING n",
    "COPY (SELECT n FROM scratch) TO STDOUT",
])
def test_a_reset_step_that_returns_rows_is_refused_and_nothing_stays(postgres, statement):
    began = time.monotonic()
    message = refused(SqlCountError, execute, writer(postgres), ["INSERT INTO scratch VALUES (1)", statement], RESET)
    assert time.monotonic() - began < 3
    assert message.startswith(f"{RESET}.statements[1]: "), message
    assert ("returns rows; a reset step changes the database" in message) or message.endswith(
        "started a COPY, which a count or a reset step may not"), message
    assert postgres.run("SELECT count(*) FROM scratch", DATABASE) == [[0]]  # the first step was undone


def test_a_reset_that_lifts_the_statement_timeout_is_cut_at_the_deadline_and_cancelled(postgres):
    # As one entry, PostgreSQL refuses the second statement (each step is one prepared statement).
    message = refused(SqlCountError, execute, writer(postgres), ["SET statement_timeout = 0; SELECT pg_sleep(60)"],
                      RESET)
    assert message.endswith("(SQLSTATE 42601: a syntax error, or more than one statement)")
    # As two, the server's timeout is lifted; the call's deadline is the client's.
    url = writer(postgres, application_name="elves-reset-probe")
    began = time.monotonic()
    message = refused(SqlCountUnavailable, execute, url,
                      ["SET statement_timeout = 0", "DO $$ BEGIN PERFORM pg_sleep(60); END $$"], RESET, seconds=3)
    took = time.monotonic() - began
    assert took < 3.5, f"the reset took {took:.1f} s"
    assert message == (f"{RESET}.statements[1]: PostgreSQL at 127.0.0.1:{postgres.port}/{DATABASE} did not answer"
                       " within 3 s, all one call may take; its statement was cancelled")
    # The backend is gone (the statement cancelled, the connection closed), not sleeping for a minute.
    wait_for(lambda: postgres.run("SELECT count(*) FROM pg_stat_activity WHERE application_name ="
                                  " 'elves-reset-probe'") == [[0]],
             "the reset's backend to end", timeout=5)


def test_a_reset_that_floods_notices_is_cut_and_its_backend_ends(postgres):
    """1.5 MB of notices, then a minute's sleep: the call stops reading at 1 MiB, and the rest fits
    in the sockets' buffers, so the backend would sleep on, unaware, holding its locks."""
    url = writer(postgres, application_name="elves-notice-probe")
    flood = ("DO $$ BEGIN FOR i IN 1..1500 LOOP RAISE NOTICE '%', repeat('n', 1000); END LOOP;"
             " PERFORM pg_sleep(60); END $$")
    message = refused(SqlCountError, execute, url, ["INSERT INTO scratch VALUES (1)", flood], RESET)
    assert message == (f"{RESET}.statements[1]: PostgreSQL at 127.0.0.1:{postgres.port}/{DATABASE} answered with"
                       " more than the 1 MiB one call may read: cut")
    wait_for(lambda: postgres.run("SELECT count(*) FROM pg_stat_activity WHERE application_name ="
                                  " 'elves-notice-probe'") == [[0]],
             "the reset's backend to end", timeout=5)
    assert postgres.run("SELECT count(*) FROM scratch", DATABASE) == [[0]]


# --- a server that trickles ---------------------------------------------------------------


def _message(code: bytes, body: bytes = b"") -> bytes:
    return code + struct.pack("!i", len(body) + 4) + body


BACKEND_PID, BACKEND_KEY = 4242, 99
LOGGED_IN = (_message(b"R", struct.pack("!i", 0)) + _message(b"K", struct.pack("!ii", BACKEND_PID, BACKEND_KEY))
             + _message(b"Z", b"I"))


class TricklingServer:
    """A loopback server that speaks just enough of PostgreSQL's protocol: it takes the startup
    message, then sends `before` at once and the answer after it a byte every half second, for
    minutes; it records the cancel requests it gets on other connections."""

    def __init__(self, before: bytes):
        self.before = before
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.cancels: list[bytes] = []
        self.closed = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def url(self, **parameters: str) -> str:
        query = "&".join(f"{k}={v}" for k, v in {"sslmode": "disable", **parameters}.items())
        return f"postgresql://reader:x@127.0.0.1:{self.port}/shop?{query}"

    def _serve(self) -> None:
        first = True
        while not self.closed.is_set():
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            if first:
                first = False
                threading.Thread(target=self._trickle, args=(connection,), daemon=True).start()
            else:
                with connection:
                    self.cancels.append(connection.recv(16))

    def _trickle(self, connection: socket.socket) -> None:
        with connection:
            try:
                connection.recv(1024)  # the startup message
                connection.sendall(self.before)
                for byte in _message(b"C", b"SELECT 1".ljust(50, b" ") + b"\0"):
                    if self.closed.wait(0.5):
                        return
                    connection.send(bytes([byte]))
            except OSError:
                return  # the client hung up

    def close(self) -> None:
        self.closed.set()
        self.listener.close()


@pytest.fixture
def trickling():
    servers: list[TricklingServer] = []

    def start(before: bytes) -> TricklingServer:
        servers.append(TricklingServer(before))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def test_a_server_that_trickles_is_cut_at_the_calls_deadline_and_cancelled(trickling):
    server = trickling(LOGGED_IN)
    began = time.monotonic()
    message = refused(SqlCountUnavailable, count, server.url(), "SELECT count(*) FROM t WHERE id = $TEST_ID",
                      TEST_ID, seconds=3)
    took = time.monotonic() - began
    assert took < 3.5, f"the count took {took:.1f} s"
    assert message == (f"spec.ledger.persisted.sql.query: PostgreSQL at 127.0.0.1:{server.port}/shop did not answer"
                       " within 3 s, all one call may take; its statement was cancelled")
    wait_for(lambda: server.cancels, "the cancel request", timeout=2)
    assert server.cancels == [struct.pack("!iiii", 16, 80877102, BACKEND_PID, BACKEND_KEY)]


def test_a_server_that_trickles_its_login_is_cut_at_the_connect_timeout(trickling):
    server = trickling(b"")
    began = time.monotonic()
    message = refused(SqlCountUnavailable, execute, server.url(connect_timeout="1"), ["TRUNCATE t"], RESET)
    took = time.monotonic() - began
    assert took < 1.5, f"the login took {took:.1f} s"
    assert message == f"{RESET}: could not log in to PostgreSQL at 127.0.0.1:{server.port}/shop: no answer within 1 s"
    assert server.cancels == []  # nothing to cancel before a login


def test_a_name_that_does_not_resolve_in_time_is_cut_at_the_connect_timeout(monkeypatch):
    """The resolver is the one part a test cannot slow down for real: this one never answers."""
    never = threading.Event()

    def unanswered(*_args, **_kwargs):
        never.wait(30)
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")

    monkeypatch.setattr(socket, "getaddrinfo", unanswered)
    began = time.monotonic()
    try:
        message = refused(SqlCountUnavailable, count, "postgresql://reader:x@db.shop.svc/shop?connect_timeout=1",
                          "SELECT count(*) FROM t WHERE id = $TEST_ID", TEST_ID)
    finally:
        never.set()
    assert time.monotonic() - began < 1.5
    assert message == ("spec.ledger.persisted.sql: could not resolve the host of PostgreSQL at db.shop.svc:5432/shop:"
                       " no answer within 1 s")
