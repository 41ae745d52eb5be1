"""A minimal HTTP/1.1 server and probe on asyncio streams, for the supervisor.

The supervisor is a single-threaded asyncio program (its children are polled, never
waited for in threads); its control API and readiness probes need only this much HTTP.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

log = logging.getLogger(__name__)

MAX_HEADER_BYTES = 64 * 1024
MAX_BODY_BYTES = 1024 * 1024
REQUEST_TIMEOUT_SECONDS = 10.0

_REASONS = {200: "OK", 202: "Accepted", 400: "Bad Request", 404: "Not Found",
            405: "Method Not Allowed", 409: "Conflict", 413: "Payload Too Large",
            500: "Internal Server Error", 503: "Service Unavailable"}


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)  # names in lower case

    def json(self) -> dict:
        if not self.body:
            return {}
        try:
            value = json.loads(self.body)
        except ValueError as error:
            raise BadRequest(f"body: not valid JSON ({error})") from None
        if not isinstance(value, dict):
            raise BadRequest("body: expected a JSON object")
        return value


@dataclass
class Response:
    status: int
    body: bytes
    content_type: str = "application/json"

    @classmethod
    def json(cls, value: object, status: int = 200) -> "Response":
        return cls(status, (json.dumps(value, indent=1) + "\n").encode())

    @classmethod
    def text(cls, text: str, status: int = 200) -> "Response":
        return cls(status, text.encode(), "text/plain; version=0.0.4; charset=utf-8")


class BadRequest(ValueError):
    """Bad input from a client: answered 400 with the message."""


Handler = Callable[[Request], Awaitable[Response]]


async def _read_request(reader: asyncio.StreamReader) -> Request:
    head = await reader.readuntil(b"\r\n\r\n")
    if len(head) > MAX_HEADER_BYTES:
        raise BadRequest("request headers too large")
    lines = head.decode("latin-1").split("\r\n")
    try:
        method, target, _version = lines[0].split(" ", 2)
    except ValueError:
        raise BadRequest(f"malformed request line {lines[0]!r}") from None
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length") or 0)
    if length > MAX_BODY_BYTES:
        raise BadRequest(f"body of {length} bytes is larger than {MAX_BODY_BYTES}")
    body = await reader.readexactly(length) if length else b""
    url = urlsplit(target)
    return Request(method.upper(), url.path, parse_qs(url.query), body, headers)


async def _respond(writer: asyncio.StreamWriter, response: Response) -> None:
    reason = _REASONS.get(response.status, "Status")
    head = (f"HTTP/1.1 {response.status} {reason}\r\nContent-Type: {response.content_type}\r\n"
            f"Content-Length: {len(response.body)}\r\nConnection: close\r\n\r\n")
    writer.write(head.encode() + response.body)
    await writer.drain()


async def serve(handler: Handler, host: str, port: int) -> asyncio.AbstractServer:
    """Serve `handler` on host:port, one request per connection."""

    async def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            try:
                request = await asyncio.wait_for(_read_request(reader), REQUEST_TIMEOUT_SECONDS)
                response = await handler(request)
            except BadRequest as error:
                response = Response.json({"error": str(error)}, 400)
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError,
                    ConnectionError):
                return
            except Exception as error:  # the API must answer, and the supervisor keep running
                log.exception("control API: %s", error)
                response = Response.json({"error": f"internal error: {error}"}, 500)
            await _respond(writer, response)
        except ConnectionError:
            pass
        finally:
            writer.close()

    return await asyncio.start_server(on_connection, host, port, reuse_address=True)


async def probe(host: str, port: int, path: str, timeout: float) -> int | None:
    """GET path; the status code, or None when nothing answered within the timeout."""
    writer = None
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(host, port)
            writer.write(f"GET {path} HTTP/1.0\r\nHost: {host}:{port}\r\n\r\n".encode())
            await writer.drain()
            status_line = await reader.readline()
        return int(status_line.split()[1])
    except (OSError, TimeoutError, ValueError, IndexError):
        return None
    finally:
        if writer is not None:
            writer.close()


async def port_open(host: str, port: int, timeout: float = 1.0) -> bool:
    try:
        async with asyncio.timeout(timeout):
            _, writer = await asyncio.open_connection(host, port)
        writer.close()
        return True
    except (OSError, TimeoutError):
        return False
