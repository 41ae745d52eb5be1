"""A SystemUnderTest's persisted count by SQL against a real PostgreSQL 15: the count
of this test id's rows only, $TEST_ID bound (a test id with a quote in it is a value, not SQL),
nothing written even through a role that may write, every wait bounded, each failure a clear
error naming the field, and the URL's password in no message."""

from __future__ import annotations

import socket
import threading
import time

from urllib.parse import quote

import pytest
from postgres_server import PostgresServer

from elves.engine.results.sql_count import SqlCountError, SqlCountUnavailable, count, execute, parse_url, statement

DATABASE = "shop"
ORDERS = "shop/orders/0"
QUOTED = "shop/o'brien/0"  # a test id with a quote in it (LoadTest names cannot hold one; be sure anyway)
OTHER = "shop/other/0"
COUNT = "SELECT count(*) FROM orders WHERE test_id = $TEST_ID"
# Passwords with the characters a URL must encode, and that must never show.
READER_PASSWORD = "r3ad:er/p@ss?w0rd&x"
WRITER_PASSWORD = "wr1ter-Secret-Pa55"
ENCODED = quote(READER_PASSWORD, safe="")  # as a URL holds it


@pytest.fixture(scope="module")
def postgres():
    server = PostgresServer(DATABASE, tls=True)
    server.run("CREATE TABLE orders (id serial PRIMARY KEY, test_id text NOT NULL, quantity int NOT NULL)", DATABASE)
    for test_id, rows in ((ORDERS, 40), (QUOTED, 3), (OTHER, 999)):
        server.run("INSERT INTO orders (test_id, quantity) SELECT :t, 2 FROM generate_series(1, :n)", DATABASE,
                   t=test_id, n=rows)
    server.login_role("reader", READER_PASSWORD)
    server.login_role("writer", WRITER_PASSWORD)
    server.run("GRANT SELECT ON orders TO reader; GRANT SELECT, INSERT, UPDATE, DELETE ON orders TO writer", DATABASE)
    yield server
    server.stop()


def reader(postgres: PostgresServer, **parameters: str) -> str:
    return postgres.url("reader", READER_PASSWORD, DATABASE, **parameters)


def writer(postgres: PostgresServer) -> str:
    return postgres.url("writer", WRITER_PASSWORD, DATABASE)


def rows_of(postgres: PostgresServer, test_id: str) -> int:
    return postgres.run("SELECT count(*) FROM orders WHERE test_id = :t", DATABASE, t=test_id)[0][0]


def failure(error: type[SqlCountError], url: str, query: str = COUNT, test_id: str = ORDERS, **kwargs) -> str:
    """The message of the error counting raises; it never shows the URL or a password."""
    with pytest.raises(error) as raised:
        count(url, query, test_id, **kwargs)
    message = str(raised.value)
    for secret in (url, READER_PASSWORD, ENCODED, WRITER_PASSWORD, "r3ad", "Pa55"):
        assert secret not in message, message
    return message


def test_the_count_is_this_test_ids_rows_only(postgres):
    assert count(reader(postgres), COUNT, ORDERS) == 40
    assert count(reader(postgres), COUNT, "shop/nothing/0") == 0
    # sum() over rows is numeric in PostgreSQL, and NULL over none: both read as counts.
    assert count(reader(postgres), "SELECT sum(quantity) FROM orders WHERE test_id = $TEST_ID", ORDERS) == 80
    assert count(reader(postgres), "select sum(quantity::bigint) from orders where test_id = $TEST_ID", "none") == 0
    # WITH first, the placeholder twice, a trailing semicolon.
    query = "WITH mine AS (SELECT * FROM orders WHERE test_id = $TEST_ID OR test_id = $TEST_ID) SELECT count(*) FROM mine;"
    assert count(reader(postgres), query, ORDERS) == 40


def test_the_test_id_is_bound_as_a_parameter_and_cannot_inject(postgres):
    assert statement(COUNT) == "SELECT count(*) FROM orders WHERE test_id = $1"
    assert count(reader(postgres), COUNT, QUOTED) == 3  # the quote is part of the value
    # Pasted into the text, this id would count every row (1042): bound, it is an id nobody has.
    assert count(reader(postgres), COUNT, "x' OR '1'='1") == 0
    assert count(reader(postgres), COUNT, "x'; DELETE FROM orders; --") == 0
    assert rows_of(postgres, ORDERS) == 40


def test_nothing_is_written_even_through_a_role_that_may_write(postgres):
    deleting = "WITH gone AS (DELETE FROM orders WHERE test_id = $TEST_ID RETURNING 1) SELECT count(*) FROM gone"
    message = failure(SqlCountError, writer(postgres), deleting)
    assert message.startswith("spec.ledger.persisted.sql.query: tried to write")
    assert "READ ONLY transaction" in message
    # A second statement (which the model refuses at admission) is refused by PostgreSQL too:
    # the query goes as one prepared statement.
    message = failure(SqlCountError, writer(postgres), COUNT + "; DELETE FROM orders")
    assert message.startswith("spec.ledger.persisted.sql.query: PostgreSQL at 127.0.0.1:")
    assert "(SQLSTATE 42601: a syntax error, or more than one statement)" in message
    # Nor can the query turn the transaction read-write once it has begun.
    failure(SqlCountError, writer(postgres),
            "SELECT count(*) FROM orders WHERE test_id = $TEST_ID AND set_config('transaction_read_only', 'off', true) = 'off'")
    assert rows_of(postgres, ORDERS) == 40


@pytest.mark.parametrize("query, says", [
    ("SELECT count(*), 1 FROM orders WHERE test_id = $TEST_ID", "its row has 2 columns"),
    ("SELECT 1 FROM orders WHERE test_id = $TEST_ID", "it returned more than one row"),
    ("SELECT 1 FROM orders WHERE test_id = $TEST_ID AND false", "it returned 0 rows"),
    ("SELECT max(test_id) FROM orders WHERE test_id = $TEST_ID", "its column is str, not an integer"),
    ("SELECT avg(quantity) + 0.5 FROM orders WHERE test_id = $TEST_ID", "its column is Decimal, not an integer"),
    ("SELECT -count(*) FROM orders WHERE test_id = $TEST_ID", "a count is never negative"),
    ("SELECT count(*) FROM no_such_table WHERE test_id = $TEST_ID", "refused it (SQLSTATE 42P01: no such table)"),
])
def test_a_query_that_is_not_one_integer_is_an_error_naming_the_query(postgres, query, says):
    message = failure(SqlCountError, reader(postgres), query)
    assert message.startswith("spec.ledger.persisted.sql.query: ") and says in message, message


def test_a_slow_query_is_cut_by_its_statement_timeout(postgres):
    began = time.monotonic()
    message = failure(SqlCountUnavailable, reader(postgres),
                      "SELECT count(*) FROM orders, pg_sleep(5) WHERE test_id = $TEST_ID", statement_timeout=0.5)
    assert time.monotonic() - began < 4
    assert message.startswith("spec.ledger.persisted.sql.query: did not finish within 0.5 s (statement_timeout)")
    # The connect timeout bounds the login only: a count may take longer (over TLS too, prefer's).
    slow = "SELECT count(*) FROM orders, pg_sleep(1.5) WHERE test_id = $TEST_ID"
    assert count(reader(postgres, connect_timeout="1"), slow, ORDERS) == 40


def test_a_database_that_is_not_there_is_a_clear_error_within_the_connect_timeout(postgres):
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    message = failure(SqlCountUnavailable, f"postgresql://reader:{ENCODED}@127.0.0.1:{port}/shop")
    assert message.startswith(f"spec.ledger.persisted.sql: could not connect to PostgreSQL at 127.0.0.1:{port}/shop:")
    # One that takes the connection and never answers: the login's wait is the connect timeout.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        port = silent.getsockname()[1]
        began = time.monotonic()
        message = failure(SqlCountUnavailable, f"postgresql://reader:x@127.0.0.1:{port}/shop?connect_timeout=1")
        assert time.monotonic() - began < 3
    assert message == (f"spec.ledger.persisted.sql: could not log in to PostgreSQL at 127.0.0.1:{port}/shop:"
                       " no answer within 1 s")


def test_a_refused_login_and_a_missing_database_are_errors_not_retried(postgres):
    message = failure(SqlCountError, postgres.url("reader", "wrong", DATABASE))
    assert "refused the login of role reader (SQLSTATE 28P01: password authentication failed)" in message
    assert not isinstance(_raised(postgres.url("reader", "wrong", DATABASE)), SqlCountUnavailable)
    message = failure(SqlCountError, postgres.url("reader", READER_PASSWORD, "nowhere"))
    assert message.endswith(f"PostgreSQL at 127.0.0.1:{postgres.port}/nowhere refused the login of role reader"
                            " (SQLSTATE 3D000: no such database)")


def _raised(url: str) -> SqlCountError:
    with pytest.raises(SqlCountError) as raised:
        count(url, COUNT, ORDERS)
    return raised.value


ENCRYPTED = "SELECT count(*) FROM pg_stat_ssl WHERE pid = pg_backend_pid() AND ssl AND $TEST_ID::text IS NOT NULL"


def test_tls_as_sslmode_says(postgres):
    """This server offers TLS with a certificate no system CA vouches for."""
    for sslmode, encrypted in (("require", 1), ("prefer", 1), ("allow", 0), ("disable", 0)):
        assert count(reader(postgres, sslmode=sslmode), ENCRYPTED, ORDERS) == encrypted, sslmode
    assert count(reader(postgres), ENCRYPTED, ORDERS) == 1  # prefer, as libpq
    for sslmode in ("verify-ca", "verify-full"):
        message = failure(SqlCountError, reader(postgres, sslmode=sslmode))
        assert message.startswith("spec.ledger.persisted.sql: PostgreSQL at 127.0.0.1:")
        assert f"its certificate is not trusted (sslmode={sslmode})" in message


def test_a_server_without_tls_is_refused_when_sslmode_requires_it():
    """A server that answers no to TLS (as PostgreSQL without ssl=on does): require refuses,
    before any password is sent."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        answering = threading.Thread(target=_refuse_tls, args=(server,), daemon=True)
        answering.start()
        message = failure(SqlCountError, f"postgresql://reader:{ENCODED}@127.0.0.1:{port}/shop?sslmode=require")
        answering.join(timeout=5)
    assert message == f"spec.ledger.persisted.sql: PostgreSQL at 127.0.0.1:{port}/shop does not accept TLS, which" \
                      " sslmode=require requires"


def _refuse_tls(server: socket.socket) -> None:
    connection, _ = server.accept()
    with connection:
        connection.recv(8)  # the SSLRequest
        connection.sendall(b"N")


@pytest.mark.parametrize("url, says", [
    (f"mysql://reader:{ENCODED}@db:3306/shop", "it must start with postgresql://"),
    (f"postgresql://reader:{ENCODED}@db:5432/", "it names no database"),
    (f"postgresql://:{ENCODED}@db:5432/shop", "it names no user"),
    (f"postgresql://reader:{ENCODED}@db:port/shop", "its port is not a number"),
    (f"postgresql://reader:{ENCODED}@db/shop?sslrootcert=/x&host=/tmp", "parameters Elves does not take: host, sslrootcert"),
    (f"postgresql://reader:{ENCODED}@db/shop?sslmode=always", "sslmode must be one of"),
    (f"postgresql://reader:{ENCODED}@db/shop?connect_timeout=600", "connect_timeout must be more than 0"),
    (READER_PASSWORD, "it must start with postgresql://"),
])
def test_a_bad_url_is_refused_without_showing_it(url, says):
    message = failure(SqlCountError, url)
    assert message.startswith("spec.ledger.persisted.sql.secretRef: the value is not a usable postgresql:// URL: ")
    assert says in message, message


def test_the_url_is_read_as_libpq_reads_it():
    database = parse_url("postgres://ledger%40shop:p%2Fw@[::1]:6432/orders%20db?sslmode=verify-full&application_name=x")
    assert (database.host, database.port, database.database, database.user, database.password, database.sslmode) == (
        "::1", 6432, "orders db", "ledger@shop", "p/w", "verify-full")
    assert database.where == "[::1]:6432/orders db" and database.loopback
    assert "p/w" not in repr(database)
    assert parse_url("postgresql://u@db.shop.svc/orders").port == 5432


def test_reset_statements_run_in_one_transaction_all_or_none(postgres):
    """A SystemUnderTest's reset steps (spec.reset.sql): through a role that may write, in order,
    committed together; one that fails undoes the others and names its place in the list."""
    postgres.run("CREATE TABLE scratch (test_id text); INSERT INTO scratch VALUES ('a'), ('b')", DATABASE)
    postgres.run("GRANT SELECT, INSERT, DELETE, TRUNCATE ON scratch TO writer", DATABASE)
    failing = ["DELETE FROM scratch WHERE test_id = 'a'", "TRUNCATE no_such_table"]
    with pytest.raises(SqlCountError) as error:
        execute(writer(postgres), failing, "spec.reset.sql")
    assert str(error.value).startswith("spec.reset.sql.statements[1]: PostgreSQL at 127.0.0.1:")
    assert str(error.value).endswith("refused it (SQLSTATE 42P01: no such table)")
    assert "no_such_table" not in str(error.value) and WRITER_PASSWORD not in str(error.value)
    assert postgres.run("SELECT count(*) FROM scratch", DATABASE) == [[2]]  # the first was undone
    execute(writer(postgres), ["DELETE FROM scratch WHERE test_id = 'a'", "INSERT INTO scratch VALUES ('c');"],
            "spec.reset.sql")
    assert postgres.run("SELECT test_id FROM scratch ORDER BY 1", DATABASE) == [["b"], ["c"]]
    # Two statements in one entry are refused by PostgreSQL as well as by the model.
    with pytest.raises(SqlCountError, match=r"statements\[0\].*SQLSTATE 42601"):
        execute(writer(postgres), ["DELETE FROM scratch; DELETE FROM orders"], "spec.reset.sql")
    assert rows_of(postgres, ORDERS) == 40
    # Its URL problems name its own field.
    with pytest.raises(SqlCountError, match=r"^spec\.reset\.sql\.secretRef: the value is not a usable"):
        execute("mysql://x", ["TRUNCATE scratch"], "spec.reset.sql")
