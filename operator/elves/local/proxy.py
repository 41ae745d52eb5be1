"""A round-robin TCP proxy: the local stand-in for a Kubernetes Service.

Like kube-proxy it balances connections, not requests (a keep-alive client stays on one
replica), and it only picks replicas that are ready. A replica that refuses the
connection is skipped for the next one. With no ready replica at all it answers the
request with 503, as an ingress would, so an HTTP client sees why instead of a reset.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_SECONDS = 2.0
CHUNK_BYTES = 64 * 1024
# Reading the request we cannot forward, so that closing does not reset the connection
# before the client has read the 503.
DISCARD_TIMEOUT_SECONDS = 2.0
DISCARD_MAX_BYTES = 1024 * 1024

Backends = Callable[[], list[tuple[str, int]]]


class RoundRobinProxy:
    def __init__(self, name: str, backends: Backends) -> None:
        self.name = name
        self._backends = backends
        self._turn = itertools.count()
        self.connections_total = 0
        self.rejected_total = 0  # clients closed because no replica was ready
        self._server: asyncio.AbstractServer | None = None
        self._open: set[asyncio.Task] = set()

    async def start(self, host: str, port: int) -> None:
        self._server = await asyncio.start_server(self._accept, host, port, reuse_address=True)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._open):
            task.cancel()
        if self._open:
            await asyncio.gather(*self._open, return_exceptions=True)

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        backends = self._backends()
        if not backends:
            return None
        first = next(self._turn)
        for i in range(len(backends)):
            host, port = backends[(first + i) % len(backends)]
            try:
                async with asyncio.timeout(CONNECT_TIMEOUT_SECONDS):
                    return await asyncio.open_connection(host, port)
            except (OSError, TimeoutError) as error:
                log.info("%s: replica %s:%d refused (%s), trying the next", self.name, host, port, error)
        return None

    async def _accept(self, client_reader: asyncio.StreamReader,
                      client_writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._open.add(task)
        self.connections_total += 1
        upstream_writer = None
        try:
            upstream = await self._connect()
            if upstream is None:
                self.rejected_total += 1
                await self._unavailable(client_reader, client_writer)
                return
            upstream_reader, upstream_writer = upstream
            await asyncio.gather(_pipe(client_reader, upstream_writer),
                                 _pipe(upstream_reader, client_writer))
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._open.discard(task)
            for writer in (client_writer, upstream_writer):
                if writer is not None:
                    writer.close()

    async def _unavailable(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(DISCARD_TIMEOUT_SECONDS):
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length" and value.strip().isdigit():
                        length = int(value.strip())
                if 0 < length <= DISCARD_MAX_BYTES:
                    await reader.readexactly(length)
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            pass
        body = f'{{"error":"no ready replica of {self.name}"}}\n'.encode()
        writer.write(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                     + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
        await writer.drain()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK_BYTES):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()  # pass the half-close on; the other direction may go on
    except (ConnectionError, OSError):
        writer.close()
