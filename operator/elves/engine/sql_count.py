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
- a connect timeout, a statement_timeout and a socket timeout bound every step: a database that
  does not answer is an error within seconds, never a hang;
- the URL and its password never reach a message: errors name the host, port and database.

An error that may pass (the database unreachable, restarting, a statement cut by its timeout
while the system is busy) is SqlCountUnavailable, which the phase machine rides out for a while
(elves.engine.blips); any other (a refused login, a query that fails or returns something else
than one integer, a write) is SqlCountError, which ends the test in Error at once, naming the field.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

import pg8000.native
from pg8000.exceptions import DatabaseError, InterfaceError

from elves.engine.blips import TransientError
from elves.engine.models.target import TEST_ID_PLACEHOLDER

FIELD = "spec.ledger.persisted.sql"
# How long the TCP connection (and the TLS and login after it) may take, unless the URL's
# connect_timeout says otherwise (at most MAX_CONNECT_TIMEOUT_SECONDS).
CONNECT_TIMEOUT_SECONDS = 5.0
MAX_CONNECT_TIMEOUT_SECONDS = 30.0
# PostgreSQL's statement_timeout for the count: a count by test id needs an index, not minutes.
STATEMENT_TIMEOUT_SECONDS = 10.0
# What each read of the socket may wait beyond the statement's own timeout.
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

    def scrub(self, text: str) -> str:
        """`text` without the password, in plain or URL-encoded form."""
        for secret in {self.password, quote(self.password, safe="")} - {""}:
            text = text.replace(secret, "***")
        return text


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


def count(url: str, query: str, test_id: str, statement_timeout: float = STATEMENT_TIMEOUT_SECONDS) -> int:
    """The query's count for `test_id`, read through `url` in a READ ONLY transaction."""
    database = parse_url(url)
    try:
        return _count(database, query, test_id, statement_timeout)
    except SqlCountError as exc:
        raise type(exc)(database.scrub(str(exc))) from None


def _count(database: Database, query: str, test_id: str, statement_timeout: float) -> int:
    connection = _connect(database, statement_timeout + SOCKET_MARGIN_SECONDS)
    try:
        try:
            connection.run("START TRANSACTION READ ONLY")
            connection.run(f"SET LOCAL statement_timeout = {max(1, int(statement_timeout * 1000))}")
            # The text as written (no client-side parsing of it), with the test id as $1's value.
            rows = connection.execute_unnamed(statement(query), vals=(test_id,)).rows
            connection.run("ROLLBACK")
        except DatabaseError as exc:
            raise _query_error(database, exc, statement_timeout, f"{database.field}.query") from None
        except (InterfaceError, OSError) as exc:
            raise _connection_lost(database, exc, statement_timeout) from None
    finally:
        _close(connection)
    return _one_integer(rows)


def execute(url: str, statements: list[str], field: str, statement_timeout: float = STATEMENT_TIMEOUT_SECONDS) -> None:
    """Run `statements` through `url` in one transaction, all or none (reset steps, `field`), each
    as one prepared statement with the statement timeout."""
    database = parse_url(url, field)
    try:
        _execute(database, statements, statement_timeout)
    except SqlCountError as exc:
        raise type(exc)(database.scrub(str(exc))) from None


def _execute(database: Database, statements: list[str], statement_timeout: float) -> None:
    connection = _connect(database, statement_timeout + SOCKET_MARGIN_SECONDS)
    try:
        connection.run("START TRANSACTION")
        connection.run(f"SET LOCAL statement_timeout = {max(1, int(statement_timeout * 1000))}")
        for index, text in enumerate(statements):
            try:
                connection.execute_unnamed(text)
            except DatabaseError as exc:
                raise _query_error(database, exc, statement_timeout,
                                   f"{database.field}.statements[{index}]") from None
        connection.run("COMMIT")
    except DatabaseError as exc:
        raise _query_error(database, exc, statement_timeout, database.field) from None
    except (InterfaceError, OSError) as exc:
        raise _connection_lost(database, exc, statement_timeout) from None
    finally:
        _close(connection)


def _connection_lost(database: Database, exc: BaseException, statement_timeout: float) -> SqlCountUnavailable:
    return SqlCountUnavailable(f"{database.field}: the connection to PostgreSQL at {database.where} failed:"
                               f" {_reason(exc, statement_timeout + SOCKET_MARGIN_SECONDS)}")


def _connect(database: Database, io_timeout: float) -> pg8000.native.Connection:
    """A logged-in connection: TLS as sslmode says (prefer: TLS when the server offers it)."""
    tries = {"disable": [_plain], "allow": [_plain, _unverified], "prefer": [_unverified, _plain],
             "require": [_unverified], "verify-ca": [_verified_ca], "verify-full": [_verified_full]}[database.sslmode]
    for index, context in enumerate(tries):
        try:
            return _login(database, context, io_timeout)
        except _NoTls:
            if index + 1 == len(tries):
                raise SqlCountError(f"{database.field}: PostgreSQL at {database.where} does not accept TLS, which"
                                    f" sslmode={database.sslmode} requires") from None
    raise AssertionError("unreachable")  # every sslmode has at least one way to try


class _NoTls(Exception):
    """The server answered the TLS request with a no."""


def _login(database: Database, tls: Callable[[], ssl.SSLContext | bool],
           io_timeout: float) -> pg8000.native.Connection:
    try:
        sock = socket.create_connection((database.host, database.port), timeout=database.connect_timeout)
    except OSError as exc:
        raise SqlCountUnavailable(f"{database.field}: could not connect to PostgreSQL at {database.where}:"
                                  f" {_reason(exc, database.connect_timeout)}") from None
    # TLS, the login and the first answer within the connect timeout; each later read within io_timeout.
    sock.settimeout(database.connect_timeout)
    try:
        connection = pg8000.native.Connection(
            database.user, host=database.host, port=database.port, database=database.database,
            password=database.password, sock=sock, ssl_context=tls(), timeout=database.connect_timeout,
            application_name=database.application_name)
    except DatabaseError as exc:
        sock.close()
        code, message = _fields(exc)
        error = SqlCountUnavailable if _transient(code) else SqlCountError
        raise error(f"{database.field}: PostgreSQL at {database.where} refused the connection of role {database.user}:"
                    f" {message} (SQLSTATE {code})") from None
    except ssl.SSLCertVerificationError as exc:
        sock.close()
        raise SqlCountError(f"{database.field}: PostgreSQL at {database.where}: its certificate is not trusted"
                            f" (sslmode={database.sslmode}): {exc.verify_message}") from None
    except (InterfaceError, OSError) as exc:
        sock.close()
        if "refuses SSL" in str(exc):
            raise _NoTls() from None
        raise SqlCountUnavailable(f"{database.field}: could not log in to PostgreSQL at {database.where}:"
                                  f" {_reason(exc, database.connect_timeout)}") from None
    # The socket pg8000 reads from: ours, or the TLS one it wrapped ours in.
    getattr(connection, "_usock", sock).settimeout(io_timeout)
    return connection


def _plain() -> bool:
    """No TLS (pg8000's ssl_context=False)."""
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
    code, message = _fields(exc)
    if code == "57014":
        hint = ": a count by test id wants an index on it" if where.endswith(".query") else ""
        return SqlCountUnavailable(f"{where}: did not finish within {statement_timeout:g} s (statement_timeout) on"
                                   f" PostgreSQL at {database.where}{hint}")
    if code == READ_ONLY_VIOLATION:
        return SqlCountError(f"{where}: tried to write ({message}); the count runs in a READ ONLY transaction"
                             " and may only read")
    if _transient(code):
        return SqlCountUnavailable(f"{where}: PostgreSQL at {database.where} cannot answer now: {message}"
                                   f" (SQLSTATE {code})")
    return SqlCountError(f"{where}: PostgreSQL at {database.where} refused it: {message} (SQLSTATE {code})")


def _one_integer(rows: Any) -> int:
    """The count from the query's rows: one row of one integer column (NULL, as sum() over no
    rows gives, is 0)."""
    where = f"{FIELD}.query"
    if not isinstance(rows, list) or len(rows) != 1:
        got = "no result" if not isinstance(rows, list) else f"{len(rows)} rows"
        raise SqlCountError(f"{where}: must return one row of one integer column; it returned {got}")
    (row,) = rows
    if len(row) != 1:
        raise SqlCountError(f"{where}: must return one row of one integer column; its row has {len(row)} columns")
    (value,) = row
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, Decimal)) or value != int(value):
        raise SqlCountError(f"{where}: must return one row of one integer column; its column is"
                            f" {type(value).__name__}, not an integer (count(*) is)")
    if value < 0:
        raise SqlCountError(f"{where}: returned {value}: a count is never negative")
    return int(value)


def _fields(exc: DatabaseError) -> tuple[str, str]:
    """(SQLSTATE, message) of a server's error."""
    details = exc.args[0] if exc.args and isinstance(exc.args[0], dict) else {}
    return str(details.get("C", "?")), str(details.get("M", exc))


def _transient(code: str) -> bool:
    return code.startswith(TRANSIENT_CLASSES) or code in TRANSIENT_CODES


def _reason(exc: BaseException, timeout: float) -> str:
    """What went wrong on the wire: the cause a driver's wrapper hides, in a few words."""
    cause = exc.__cause__ or exc
    if isinstance(cause, (socket.timeout, TimeoutError)):
        return f"no answer within {timeout:g} s"
    return getattr(cause, "strerror", None) or str(cause) or type(cause).__name__


def _close(connection: pg8000.native.Connection) -> None:
    try:
        connection.close()
    except Exception:  # noqa: BLE001 - the count is read (or failed already); a broken goodbye changes nothing
        pass
