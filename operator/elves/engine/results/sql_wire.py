"""The wire of one SQL call (a SystemUnderTest's count or its reset, elves.engine.results.sql_count): every
byte the operator reads from or writes to a database passes here, within the call's one wall-clock
deadline and its byte budget, so that no query, statement or server can hang a tick or fill the
operator's memory, whatever it sends or sets.

pg8000 speaks the protocol (the login, SCRAM, the messages); it is handed a connected socket whose
file (its makefile, which pg8000 reads and writes through) is a `Wire`:
- each message is read only after its length is checked: one over MAX_MESSAGE_BYTES (a DataRow
  holding a 300 MB value, or an error quoting one) is refused by its 5-byte header, never read;
- a call reads at most MAX_CALL_BYTES in all (a server that sends notices for ever);
- each receive waits only for the time the call has left (set before each one), so a server that
  trickles a byte a second is cut at the deadline, not after its last byte; so do the name's
  resolution (in a thread: getaddrinfo takes no timeout), the connect and the TLS handshake;
- the deadline is the client's, so no statement can lift it (SET statement_timeout lifts only the
  server's own). A call cut while a statement runs cancels it (a CancelRequest on a new
  connection, as libpq's PQcancel) and closes the connection, so the backend ends as well.
The cuts are exceptions of their own (`Cut`, not OSError), which pg8000 passes through unchanged.

`run` and `returns_rows` drive pg8000's CoreConnection by its message functions (send_PARSE,
send_BIND, handle_messages, its message_types table), since its execute asks for every row: a
pg8000 other than the pinned 1.31.6 must pass tests/unit/engine/results/test_sql_count_bounds.py first.
"""

from __future__ import annotations

import socket
import ssl
import struct
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pg8000.converters import make_params
from pg8000.core import COPY_IN_RESPONSE, COPY_OUT_RESPONSE, NULL_BYTE, SYNC_MSG, Context

# The largest message a count or a reset needs: a row of one integer is some 20 bytes, an error or
# a row description a few hundred. A larger one is refused unread.
MAX_MESSAGE_BYTES = 8 * 1024
# All one call may read (the login, every statement's answer, the notices).
MAX_CALL_BYTES = 1024 * 1024
# Kept out of a call's deadline for cancelling its statement (loopback or cluster: milliseconds).
CANCEL_SECONDS = 1.0
SSL_REQUEST = struct.pack("!ii", 8, 80877103)
CANCEL_REQUEST_CODE = 80877102
EXECUTE = b"E"

# (family, type, proto, sockaddr) of one address to connect to.
Address = tuple[int, int, int, Any]


class Cut(Exception):
    """The call was cut at one of its bounds."""


class DeadlinePassed(Cut):
    """The call's time (or its login's) ran out."""


class TooLarge(Cut):
    """The server sent a message larger than MAX_MESSAGE_BYTES (its size is `size`)."""

    def __init__(self, size: int):
        super().__init__(size)
        self.size = size


class TooMuch(Cut):
    """The server sent more than MAX_CALL_BYTES in all."""


class NotPostgres(Cut):
    """The server's answer is not PostgreSQL's protocol."""


class Copies(Cut):
    """A statement started a COPY, which neither a count nor a reset may do."""


@dataclass
class Bounds:
    """One call's bounds: it may take `seconds` in all, so its reads and writes end at `end`
    (time.monotonic(); CANCEL_SECONDS before, kept for the cancel) and the step under way at `until`
    (at most `end`: a login has its own, the URL's connect timeout); `read`: the bytes read so far."""

    seconds: float
    end: float = field(init=False)
    until: float = field(init=False)
    read: int = 0

    def __post_init__(self) -> None:
        self.end = self.until = time.monotonic() + max(0.0, self.seconds - CANCEL_SECONDS)

    def step(self, seconds: float | None = None) -> None:
        """The next step may last `seconds` (None: the rest of the call)."""
        self.until = self.end if seconds is None else min(self.end, time.monotonic() + seconds)

    def left(self) -> float:
        """The seconds the step has left; DeadlinePassed when none."""
        left = self.until - time.monotonic()
        if left <= 0:
            raise DeadlinePassed()
        return left

    @property
    def call_passed(self) -> bool:
        return time.monotonic() >= self.end

    def spend(self, size: int) -> None:
        if size < 0:
            raise NotPostgres()
        if size > MAX_MESSAGE_BYTES:
            raise TooLarge(size)
        self.read += size
        if self.read > MAX_CALL_BYTES:
            raise TooMuch()


class Wire:
    """What pg8000 reads and writes through (in place of socket.makefile's file), bounded."""

    def __init__(self, sock: socket.socket, bounds: Bounds):
        self.sock = sock
        self.bounds = bounds
        self._out = bytearray()

    def read(self, size: int) -> bytes:
        self.bounds.spend(size)
        data = bytearray()
        while len(data) < size:
            self.sock.settimeout(self.bounds.left())
            try:
                chunk = self.sock.recv(size - len(data))
            except TimeoutError:
                raise DeadlinePassed() from None
            if not chunk:
                break  # the server closed: pg8000 sees the short read
            data += chunk
        return bytes(data)

    def write(self, data: bytes) -> None:
        self._out += data

    def flush(self) -> None:
        self.sock.settimeout(self.bounds.left())
        try:
            self.sock.sendall(self._out)  # the timeout bounds the whole sendall
        except TimeoutError:
            raise DeadlinePassed() from None
        self._out.clear()


class _Bounded:
    """A socket whose file is a Wire on its call's Bounds (set right after it is made)."""

    bounds: Bounds
    wire: Wire

    def makefile(self, *_: Any, **__: Any) -> Wire:
        self.wire = Wire(self, self.bounds)  # type: ignore[arg-type]
        return self.wire


class BoundedSocket(_Bounded, socket.socket):
    address: Any = None


# A subclass of SSLSocket, so that pg8000 still binds SCRAM to the TLS channel (SCRAM-SHA-256-PLUS).
class BoundedTlsSocket(_Bounded, ssl.SSLSocket):
    pass


def resolve(host: str, port: int, bounds: Bounds) -> list[Address]:
    """The addresses of `host`, within the step's time. The lookup runs in a daemon thread (the C
    library's resolver takes no timeout); one still running when the time is up is left to end by
    the resolver's own timeouts."""
    found: dict[str, Any] = {}

    def lookup() -> None:
        try:
            found["addresses"] = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            found["error"] = exc

    thread = threading.Thread(target=lookup, name=f"resolve {host}", daemon=True)
    thread.start()
    thread.join(bounds.left())
    if thread.is_alive():
        raise DeadlinePassed()
    if "error" in found:
        raise found["error"]
    return [(family, kind, proto, address) for family, kind, proto, _, address in found["addresses"]]


def connect(addresses: Sequence[Address], bounds: Bounds) -> BoundedSocket:
    """A TCP connection to the first address that takes one, within the step's time."""
    error: OSError = OSError("the name has no address")
    for family, kind, proto, address in addresses:
        sock = BoundedSocket(family, kind, proto)
        sock.bounds, sock.address = bounds, address
        try:
            sock.settimeout(bounds.left())
            sock.connect(address)
            return sock
        except TimeoutError:
            sock.close()
            raise DeadlinePassed() from None
        except BaseException as exc:
            sock.close()
            if not isinstance(exc, OSError):
                raise
            error = exc
    raise error


def start_tls(sock: BoundedSocket, context: ssl.SSLContext, host: str) -> BoundedTlsSocket | None:
    """TLS on `sock` as PostgreSQL starts it (an SSLRequest, then the handshake, within the step's
    time); None when the server answers that it has none."""
    bounds = sock.bounds
    try:
        sock.settimeout(bounds.left())
        sock.sendall(SSL_REQUEST)
        answer = sock.recv(1)
        if answer == b"N":
            return None
        if answer != b"S":
            raise NotPostgres()
        context.sslsocket_class = BoundedTlsSocket
        sock.settimeout(bounds.left())  # CPython's handshake keeps to it as one deadline
        tls = context.wrap_socket(sock, server_hostname=host)
    except TimeoutError:
        raise DeadlinePassed() from None
    tls.bounds, tls.address = bounds, sock.address  # type: ignore[attr-defined]
    return tls  # type: ignore[return-value]


def cancel(sock: socket.socket, key_data: bytes | None) -> None:
    """Ask the server to cancel the statement its backend for `sock` runs (the backend's id and key
    from its login), within CANCEL_SECONDS; best effort (the closed connection ends the backend at
    its next word to us, the cancel ends the statement now)."""
    address = getattr(sock, "address", None)
    if key_data is None or address is None or len(key_data) != 8:
        return
    end = time.monotonic() + CANCEL_SECONDS
    try:
        with socket.socket(sock.family, socket.SOCK_STREAM) as canceller:
            for act in (lambda: canceller.connect(address),
                        lambda: canceller.sendall(struct.pack("!ii", 16, CANCEL_REQUEST_CODE) + key_data),
                        lambda: canceller.recv(1)):  # the server closes without a word once it has read it
                canceller.settimeout(max(0.01, end - time.monotonic()))
                act()
    except OSError:
        pass


def refuse_copies(connection: Any) -> None:
    """A COPY a statement starts ends the call (pg8000 would wait for a stream to copy to or from)."""
    def refuse(*_: Any) -> None:
        raise Copies()

    connection.message_types[COPY_IN_RESPONSE] = refuse
    connection.message_types[COPY_OUT_RESPONSE] = refuse


def run(connection: Any, sock: _Bounded, statement: str, params: tuple[Any, ...], max_rows: int) -> Context:
    """`statement` as one unnamed prepared statement with `params`, its portal executed for at most
    `max_rows` rows (the extended protocol's Execute limit: the server stops there and suspends the
    portal), in one round trip. pg8000's own execute asks for every row."""
    context = Context(statement)
    connection.send_PARSE(NULL_BYTE, statement)
    connection.send_DESCRIBE_STATEMENT(NULL_BYTE)
    connection.send_BIND(NULL_BYTE, make_params(connection.py_types, params))
    sock.wire.write(EXECUTE + struct.pack("!i", 4 + 1 + 4) + NULL_BYTE + struct.pack("!i", max_rows))
    sock.wire.write(SYNC_MSG)
    sock.wire.flush()
    connection.handle_messages(context)
    return context


def returns_rows(connection: Any, sock: _Bounded, statement: str) -> bool:
    """Whether `statement` would return rows: parsed and described by the server, not run."""
    context = Context(statement)
    connection.send_PARSE(NULL_BYTE, statement)
    connection.send_DESCRIBE_STATEMENT(NULL_BYTE)
    sock.wire.write(SYNC_MSG)
    sock.wire.flush()
    connection.handle_messages(context)
    return context.columns is not None
