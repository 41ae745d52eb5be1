"""A SystemUnderTest's persisted count by SQL (spec.ledger.persisted.sql), read from PostgreSQL,
and its reset steps (spec.reset.sql: `execute`, in one read-write transaction, all or none).

The database's URL comes from a Secret (a cluster) or a private file (the local mode): the
platform reads it (Platform.target_secret), this module only uses it. It is libpq's form,
postgresql://user:password@host:port/database?sslmode=...; only sslmode, connect_timeout and
application_name may follow the `?`.

What keeps the count honest and harmless, whatever the query says:
- $TEST_ID is bound as the statement's one parameter ($1), never pasted into its text, so a
  test id with a quote in it is a value, not SQL;
- the query is sent as one prepared statement (PostgreSQL refuses a second one in it) inside a
  READ ONLY transaction that is rolled back, so it cannot write, even through a role that may;
- at most the two rows and the bytes a count needs are read (elves.engine.results.sql_wire): its portal
  is executed for two rows at most (a second says it is not a count), a message over 8 KiB (a
  huge value, an error quoting one) is refused by its header, unread;
- reset steps return nothing: each is described first and refused, not run, if it would return rows;
- one wall-clock deadline per call bounds the name's resolution, the connect, TLS, the login,
  every statement and every read (`call_seconds`: 20 s by default); no statement can lift it (it
  is the client's), and a statement still running when it passes is cancelled;
- errors are fixed phrases with the host, port and database and the SQLSTATE: never the server's
  message (it may quote the query's data) and never the URL or its password.

An error that may pass (the database unreachable, restarting, a statement cut by its timeout
while the system is busy) is SqlCountUnavailable, which the phase machine rides out for a while
(elves.engine.results.blips); any other (a refused login, a query that fails or returns something else
than one integer, a write) is SqlCountError, which ends the test in Error at once, naming the field.
"""

from __future__ import annotations

import re
import socket
import ssl
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import pg8000.native
from pg8000.exceptions import DatabaseError, InterfaceError

from elves.engine.models.target import TEST_ID_PLACEHOLDER
from elves.engine.results import sql_wire
from elves.engine.results.blips import TransientError
from elves.engine.results.sql_wire import Bounds

FIELD = "spec.ledger.persisted.sql"
# How long the TCP connection (and the TLS and login after it) may take, unless the URL's
# connect_timeout says otherwise (at most MAX_CONNECT_TIMEOUT_SECONDS).
CONNECT_TIMEOUT_SECONDS = 5.0
MAX_CONNECT_TIMEOUT_SECONDS = 30.0
# PostgreSQL's statement_timeout for the count: a count by test id needs an index, not minutes.
STATEMENT_TIMEOUT_SECONDS = 10.0
# What one call may take beyond its login and its statement timeout (the answers, the rollback,
# the cancel). A call's whole time (call_seconds) is connect timeout + statement timeout + this:
# 5 + 10 + 5 = 20 s by default, 30 + 10 + 5 = 45 s at most. Why that is short enough: a call cut
# at its deadline raises SqlCountUnavailable, which ends the tick (elves.engine.runner.machine; the
# step is tried again later, elves.engine.results.blips), so a database that hangs or trickles holds the
# LoadTest's lock in elves.k8s.driver (which its deletion waits for) and the system's Lease (which
# other LoadTests wait for) for one call at most: 20 s (45 s), below the 120 s such a count is
# ridden out (blips.RIDE_OUT_SECONDS: tried again at least twice), the 300 s it is waited for
# before the load (Timeouts.system_ready) and the 300 s another LoadTest waits for the system
# (Timeouts.lock; the operator's ELVES_LOCK_TIMEOUT, 2 h). Only calls that answer share a tick:
# up to four between two runs of a sweep (the drain's count, the analysis's, the next run's reset
# and its baseline count).
SOCKET_MARGIN_SECONDS = 5.0
DEFAULT_PORT = 5432
SSL_MODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
URL_PARAMETERS = ("sslmode", "connect_timeout", "application_name")
APPLICATION_NAME = "elves-ledger"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
# SQLSTATE classes and codes of failures that may pass by themselves: connection exceptions,
# a server starting or shutting down, too many connections, a statement cut by its timeout,
# serialization failures and deadlocks.
TRANSIENT_CLASSES = ("08", "40", "53")
TRANSIENT_CODES = ("57014", "57P01", "57P02", "57P03")
READ_ONLY_VIOLATION = "25006"
SQLSTATE_PATTERN = re.compile(r"[0-9A-Z]{5}")
# Elves' words for the SQLSTATEs a count or a reset meets most. The server's own message is never
# shown: it may quote the query's data (`SELECT secret::int` quotes the secret).
SQLSTATE_MEANINGS = {
    "28P01": "password authentication failed",
    "28000": "the role may not log in here (pg_hba.conf, or the role lacks LOGIN)",
    "3D000": "no such database",
    "42P01": "no such table",
    "42703": "no such column",
    "42883": "no such function or operator",
    "42501": "permission denied",
    "42601": "a syntax error, or more than one statement",
    "42804": "a value of the wrong type",
    "22P02": "a text that is not a value of its type",
    "22012": "division by zero",
    "53300": "too many connections",
    "57P03": "the server is starting up or shutting down",
}


class SqlCountError(RuntimeError):
    """The SQL count cannot be read and asking again will not help; the message names the field."""

    harness_reason = "LedgerError"


class SqlCountUnavailable(SqlCountError, TransientError):
    """The database did not answer or cannot now; asking again later may succeed."""

    harness_reason = "LedgerUnavailable"


@dataclass(frozen=True)
class Database:
    """Where the count is read, from the Secret's URL (its password never shown)."""

    host: str
    port: int
    database: str
    user: str
    password: str = field(repr=False)
    # The spec field the URL serves, which every message names (the SQL count's, the reset's).
    field: str = FIELD
    sslmode: str = "prefer"
    connect_timeout: float = CONNECT_TIMEOUT_SECONDS
    application_name: str = APPLICATION_NAME

    @property
    def where(self) -> str:
        """Host, port and database, for messages (no user, no password)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}/{self.database}"

    @property
    def loopback(self) -> bool:
        return self.host in LOOPBACK_HOSTS


def parse_url(url: str, field: str = FIELD, source: str = "secretRef") -> Database:
    """The database a libpq URL names (for the spec `field`, from `source`); SqlCountError saying
    what is wrong with it (never echoing it)."""
    def bad(why: str) -> SqlCountError:
        return SqlCountError(f"{field}.{source}: the value is not a usable postgresql:// URL: {why}")

    try:
        parts = urlsplit(url.strip())
    except ValueError:
        raise bad("its host cannot be read") from None
    try:
        port = parts.port
    except ValueError:
        raise bad("its port is not a number from 0 to 65535") from None
    if parts.scheme not in ("postgresql", "postgres"):
        raise bad("it must start with postgresql://")
    if not parts.hostname:
        raise bad("it names no host (a Unix socket is not supported: give host:port)")
    if not parts.username:
        raise bad("it names no user (postgresql://user:password@host:port/database)")
    database = unquote(parts.path.lstrip("/"))
    if not database:
        raise bad("it names no database (postgresql://user:password@host:port/database)")
    try:
        options = parse_qs(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
    except ValueError:
        raise bad("its parameters after ? cannot be read") from None
    unknown = sorted(set(options) - set(URL_PARAMETERS))
    if unknown:
        raise bad(f"it has parameters Elves does not take: {', '.join(unknown)} (only {', '.join(URL_PARAMETERS)})")
    sslmode = options.get("sslmode", ["prefer"])[-1]
    if sslmode not in SSL_MODES:
        raise bad(f"sslmode must be one of {', '.join(SSL_MODES)}")
    connect_timeout = CONNECT_TIMEOUT_SECONDS
    if "connect_timeout" in options:
        try:
            connect_timeout = float(options["connect_timeout"][-1])
        except ValueError:
            raise bad("connect_timeout is not a number of seconds") from None
        if not 0 < connect_timeout <= MAX_CONNECT_TIMEOUT_SECONDS:
            raise bad(f"connect_timeout must be more than 0 and at most {MAX_CONNECT_TIMEOUT_SECONDS:g} seconds")
    return Database(host=parts.hostname, port=port or DEFAULT_PORT, database=database,
                    user=unquote(parts.username), password=unquote(parts.password or ""), field=field, sslmode=sslmode,
                    connect_timeout=connect_timeout,
                    application_name=options.get("application_name", [APPLICATION_NAME])[-1])


def statement(query: str) -> str:
    """The query as PostgreSQL gets it: $TEST_ID becomes the statement's parameter $1."""
    return query.replace(TEST_ID_PLACEHOLDER, "$1")


def call_seconds(database: Database, statement_timeout: float = STATEMENT_TIMEOUT_SECONDS) -> float:
    """All one call (a count, a reset) may take: its login, its statements, its answers."""
    return database.connect_timeout + statement_timeout + SOCKET_MARGIN_SECONDS


def count(url: str, query: str, test_id: str, statement_timeout: float = STATEMENT_TIMEOUT_SECONDS,
          seconds: float | None = None) -> int:
    """The query's count for `test_id`, read through `url` in a READ ONLY transaction, within
    `seconds` in all (default call_seconds)."""
    database = parse_url(url)
    bounds = Bounds(call_seconds(database, statement_timeout) if seconds is None else seconds)
    where = f"{database.field}.query"
    connection, sock = _connect(database, bounds)
    try:
        with _failures(database, bounds, connection, sock, statement_timeout, where):
            _begin(connection, "START TRANSACTION READ ONLY", statement_timeout)
            # The text as written (no client-side parsing of it), with the test id as $1's value;
            # one row is a count, a second says it is not: the server stops there.
            answer = sql_wire.run(connection, sock, statement(query), (test_id,), max_rows=2)
            connection.run("ROLLBACK")
    finally:
        _close(connection, sock)
    return _one_integer(answer.rows, answer.columns)


def execute(url: str, statements: list[str], field: str, statement_timeout: float = STATEMENT_TIMEOUT_SECONDS,
            seconds: float | None = None) -> None:
    """Run `statements` through `url` in one transaction, all or none (reset steps, `field`), each
    as one prepared statement that returns no rows, within `seconds` in all (default call_seconds)."""
    database = parse_url(url, field)
    bounds = Bounds(call_seconds(database, statement_timeout) if seconds is None else seconds)
    connection, sock = _connect(database, bounds)
    try:
        with _failures(database, bounds, connection, sock, statement_timeout, field):
            _begin(connection, "START TRANSACTION", statement_timeout)
        for index, text in enumerate(statements):
            where = f"{field}.statements[{index}]"
            with _failures(database, bounds, connection, sock, statement_timeout, where):
                # Described first, run only if it returns nothing: a reset's answer is never read.
                rows = sql_wire.returns_rows(connection, sock, text)
                answer = None if rows else sql_wire.run(connection, sock, text, (), max_rows=1)
            if rows or (answer is not None and answer.rows):
                raise SqlCountError(f"{where}: returns rows; a reset step changes the database (TRUNCATE, DELETE,"
                                    " UPDATE, ...) and returns nothing: nothing it returns is read")
        with _failures(database, bounds, connection, sock, statement_timeout, field):
            connection.run("COMMIT")
    finally:
        _close(connection, sock)


def _begin(connection: pg8000.native.Connection, start: str, statement_timeout: float) -> None:
    """The transaction, with the server's own statement timeout: a first line, which a statement may
    lift; the call's time (Bounds) is the one it cannot."""
    connection.run(start)
    connection.run(f"SET LOCAL statement_timeout = {max(1, int(statement_timeout * 1000))}")


@contextmanager
def _failures(database: Database, bounds: Bounds, connection: pg8000.native.Connection, sock: socket.socket,
              statement_timeout: float, where: str) -> Iterator[None]:
    """A statement's failures as SqlCountErrors naming `where`."""
    try:
        yield
    except DatabaseError as exc:
        raise _query_error(database, exc, statement_timeout, where) from None
    except Exception as exc:  # noqa: BLE001 - each kind is named in _broken
        # The statement may still be running (cut at the deadline, or its answer refused, then
        # silent in a sleep that holds its locks): it is cancelled, and the connection closed after.
        sql_wire.cancel(sock, getattr(connection, "_backend_key_data", None))
        raise _broken(database, bounds, where, exc) from None


def _broken(database: Database, bounds: Bounds, where: str, exc: Exception) -> SqlCountError:
    """A call given up in the middle of `where`, because of `exc`."""
    if isinstance(exc, sql_wire.DeadlinePassed):
        return SqlCountUnavailable(f"{where}: PostgreSQL at {database.where} did not answer within {bounds.seconds:g} s,"
                                   " all one call may take; its statement was cancelled")
    if isinstance(exc, sql_wire.Cut):
        return SqlCountError(f"{where}: PostgreSQL at {database.where} {_cut(exc)}")
    if isinstance(exc, (InterfaceError, OSError)):
        return SqlCountUnavailable(f"{where}: the connection to PostgreSQL at {database.where} failed:"
                                   f" {_reason(exc, bounds.seconds)}")
    # A message pg8000 cannot read (an unknown type, a short one).
    return SqlCountError(f"{where}: the server at {database.where} did not answer as PostgreSQL does")


def _cut(exc: sql_wire.Cut) -> str:
    """What a cut call's server did, in words (after its host, port and database)."""
    if isinstance(exc, sql_wire.TooLarge):
        return (f"answered with a message of {exc.size} bytes, more than the {sql_wire.MAX_MESSAGE_BYTES // 1024} KiB"
                " a count or a reset step needs: refused unread")
    if isinstance(exc, sql_wire.TooMuch):
        return f"answered with more than the {sql_wire.MAX_CALL_BYTES // 1024 // 1024} MiB one call may read: cut"
    if isinstance(exc, sql_wire.Copies):
        return "started a COPY, which a count or a reset step may not"
    return "did not answer as PostgreSQL does"


def _connect(database: Database, bounds: Bounds) -> tuple[pg8000.native.Connection, socket.socket]:
    """A logged-in connection: TLS as sslmode says (prefer: TLS when the server offers it); the
    name resolved once, and each try's connect, TLS and login within the connect timeout."""
    tries = {"disable": [_plain], "allow": [_plain, _unverified], "prefer": [_unverified, _plain],
             "require": [_unverified], "verify-ca": [_verified_ca], "verify-full": [_verified_full]}[database.sslmode]
    bounds.step(database.connect_timeout)
    try:
        addresses = sql_wire.resolve(database.host, database.port, bounds)
    except (sql_wire.DeadlinePassed, OSError) as exc:
        raise _unreachable(database, bounds, "resolve the host of", exc) from None
    for index, tls in enumerate(tries):
        try:
            return _login(database, addresses, tls, bounds)
        except _NoTls:
            if index + 1 == len(tries):
                raise SqlCountError(f"{database.field}: PostgreSQL at {database.where} does not accept TLS, which"
                                    f" sslmode={database.sslmode} requires") from None
    raise AssertionError("unreachable")  # every sslmode has at least one way to try


class _NoTls(Exception):
    """The server answered the TLS request with a no."""


def _unreachable(database: Database, bounds: Bounds, doing: str, exc: BaseException) -> SqlCountUnavailable:
    """Could not `doing` the database, because of `exc` (its step's time ran out, or the network)."""
    if isinstance(exc, sql_wire.DeadlinePassed):  # the connect timeout, or the call's own time
        reason = f"no answer within {bounds.seconds if bounds.call_passed else database.connect_timeout:g} s"
    else:
        reason = _reason(exc, database.connect_timeout)
    return SqlCountUnavailable(f"{database.field}: could not {doing} PostgreSQL at {database.where}: {reason}")


def _login(database: Database, addresses: list[sql_wire.Address], tls: Callable[[], ssl.SSLContext | bool],
           bounds: Bounds) -> tuple[pg8000.native.Connection, socket.socket]:
    bounds.step(database.connect_timeout)
    try:
        sock: socket.socket = sql_wire.connect(addresses, bounds)
    except (sql_wire.DeadlinePassed, OSError) as exc:
        raise _unreachable(database, bounds, "connect to", exc) from None
    try:
        context = tls()
        if context is not False:
            wrapped = sql_wire.start_tls(sock, context, database.host)  # type: ignore[arg-type]
            if wrapped is None:
                raise _NoTls()
            sock = wrapped
        connection = pg8000.native.Connection(
            database.user, host=database.host, port=database.port, database=database.database,
            password=database.password, sock=sock, ssl_context=False, application_name=database.application_name)
    except BaseException as exc:
        sock.close()
        raise _login_error(database, bounds, exc) from None
    bounds.step()  # from here on, the rest of the call's time
    sql_wire.refuse_copies(connection)
    return connection, sock


def _login_error(database: Database, bounds: Bounds, exc: BaseException) -> BaseException:
    if isinstance(exc, _NoTls):
        return exc
    if isinstance(exc, DatabaseError):
        code = _sqlstate(exc)
        error = SqlCountUnavailable if _transient(code) else SqlCountError
        return error(f"{database.field}: PostgreSQL at {database.where} refused the login of role {database.user}"
                     f" ({_described(code)})")
    if isinstance(exc, ssl.SSLCertVerificationError):
        return SqlCountError(f"{database.field}: PostgreSQL at {database.where}: its certificate is not trusted"
                             f" (sslmode={database.sslmode}): {exc.verify_message}")
    if isinstance(exc, (sql_wire.DeadlinePassed, InterfaceError, OSError)):
        return _unreachable(database, bounds, "log in to", exc)
    if isinstance(exc, sql_wire.Cut):
        return SqlCountError(f"{database.field}: PostgreSQL at {database.where} {_cut(exc)}")
    if isinstance(exc, Exception):  # a message pg8000 cannot read
        return SqlCountError(f"{database.field}: the server at {database.where} did not answer as PostgreSQL does")
    return exc  # KeyboardInterrupt and the like pass


def _plain() -> bool:
    """No TLS."""
    return False


def _unverified() -> ssl.SSLContext:
    """TLS without checking the server's certificate (libpq's require and prefer): no CAs to load
    (loading the system's takes a tenth of a second, on every try)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def _verified_ca() -> ssl.SSLContext:
    """TLS with the server's certificate checked against the system's CAs, not its name (verify-ca)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    return context


def _verified_full() -> ssl.SSLContext:
    """TLS with the server's certificate and its name checked (verify-full)."""
    return ssl.create_default_context()


def _query_error(database: Database, exc: DatabaseError, statement_timeout: float, where: str) -> SqlCountError:
    """A statement's error, in fixed words and its SQLSTATE: never the server's message, which may
    quote the query's data (or, were a password replaced in it, tell a guess that equals it)."""
    code = _sqlstate(exc)
    if code == "57014":
        hint = ": a count by test id wants an index on it" if where.endswith(".query") else ""
        return SqlCountUnavailable(f"{where}: did not finish within {statement_timeout:g} s (statement_timeout) on"
                                   f" PostgreSQL at {database.where}{hint}")
    if code == READ_ONLY_VIOLATION:
        return SqlCountError(f"{where}: tried to write (SQLSTATE {code}); the count runs in a READ ONLY transaction"
                             " and may only read")
    if _transient(code):
        return SqlCountUnavailable(f"{where}: PostgreSQL at {database.where} cannot answer now ({_described(code)})")
    return SqlCountError(f"{where}: PostgreSQL at {database.where} refused it ({_described(code)})")


def _one_integer(rows: Any, columns: Any) -> int:
    """The count from the query's first rows (two at most are read): one row of one integer column
    (NULL, as sum() over no rows gives, is 0)."""
    where = f"{FIELD}.query"
    if not isinstance(rows, list) or len(rows) != 1:
        got = "no result" if not isinstance(rows, list) else "0 rows" if not rows else "more than one row"
        raise SqlCountError(f"{where}: must return one row of one integer column; it returned {got}")
    (row,) = rows
    if len(columns or row) != 1:
        raise SqlCountError(f"{where}: must return one row of one integer column; its row has"
                            f" {len(columns or row)} columns")
    (value,) = row
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, Decimal)) or value != int(value):
        raise SqlCountError(f"{where}: must return one row of one integer column; its column is"
                            f" {type(value).__name__}, not an integer (count(*) is)")
    if value < 0:
        raise SqlCountError(f"{where}: returned a negative number: a count is never negative")
    return int(value)


def _sqlstate(exc: DatabaseError) -> str:
    """The SQLSTATE of a server's error ("?" when it has none that looks like one)."""
    details = exc.args[0] if exc.args and isinstance(exc.args[0], dict) else {}
    code = str(details.get("C", ""))
    return code if SQLSTATE_PATTERN.fullmatch(code) else "?"


def _described(code: str) -> str:
    meaning = SQLSTATE_MEANINGS.get(code)
    return f"SQLSTATE {code}: {meaning}" if meaning else f"SQLSTATE {code}"


def _transient(code: str) -> bool:
    return code.startswith(TRANSIENT_CLASSES) or code in TRANSIENT_CODES


def _reason(exc: BaseException, timeout: float) -> str:
    """What went wrong on the wire, in a few words of the operating system's (never the server's)."""
    cause = exc.__cause__ or exc
    if isinstance(cause, (socket.timeout, TimeoutError)):
        return f"no answer within {timeout:g} s"
    if isinstance(cause, OSError):
        return cause.strerror or type(cause).__name__
    return "the server ended the connection"


def _close(connection: pg8000.native.Connection, sock: socket.socket) -> None:
    """Say goodbye if there is time; the socket is closed either way (a server still sending, or
    running a cancelled statement, then ends its backend)."""
    try:
        connection.close()
    except Exception:  # noqa: BLE001 - the count is read (or failed already); a broken goodbye changes nothing
        pass
    finally:
        sock.close()
