"""Slow and idle clients cannot hold the service: read deadlines and a connection cap.

uvicorn times out nothing before a request's headers are complete, and nothing while a
body trickles in, so a few hundred half-sent requests used to hold every file descriptor
of the process. Here:

* :class:`GuardedH11Protocol` (uvicorn's h11 protocol plus two rules): the request
  headers must arrive within ``header_timeout`` seconds of the connection opening (or of
  the previous response on a kept-alive connection), else the connection gets a 408 and
  is closed; and at most ``max_connections`` connections are open per worker. At the cap a
  new connection takes the place of the oldest one still waiting for its headers (idle
  keep-alive connections included); when every connection is busy with a request, the
  new one is answered 503 and closed at once. Either way the descriptor is freed at
  once, so the process never reaches its file descriptor limit.
* :class:`BodyDeadline` (ASGI middleware): the whole body must arrive within
  ``body_timeout`` seconds of the headers, else 408 and the connection is closed.
* :func:`raise_fd_limit` and :func:`default_max_connections`: the soft ``RLIMIT_NOFILE``
  is raised to the hard limit at start, and the default cap leaves room under it for the
  descriptors a request uses (state database, hook processes, provider connections).

Why not another server: hypercorn has read timeouts, but the service's socket binding,
``--workers`` supervision and graceful shutdown are built on uvicorn; the two rules it
lacks fit in this small subclass of its h11 protocol (the protocol ``judge serve``
selects explicitly, so uvicorn never picks a different one).
"""

from __future__ import annotations

import asyncio
import logging
import resource
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from judge.errors import ApiError

#: Seconds a client has to send its request headers.
DEFAULT_HEADER_TIMEOUT = 10.0
#: Seconds a client has to send the whole request body once the headers are in.
DEFAULT_BODY_TIMEOUT = 60.0
#: Upper bound of the default connection cap, whatever the descriptor limit.
MAX_DEFAULT_CONNECTIONS = 4096
#: Descriptors kept free for everything that is not a client connection.
FD_RESERVE = 128
#: Descriptors one connection may need while its request runs (socket, hook pipes, files).
FDS_PER_CONNECTION = 8

log = logging.getLogger("judge.server")


def _raw_answer(status: bytes, message: str, extra: bytes = b"") -> bytes:
    body = ('{"error": "' + message + '"}').encode()
    head = b"HTTP/1.1 " + status + b"\r\ncontent-type: application/json\r\nconnection: close\r\n" + extra
    return head + b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body


_TIMEOUT_408 = _raw_answer(b"408 Request Timeout", "request headers not received in time; closing")
_BUSY_503 = _raw_answer(
    b"503 Service Unavailable", "too many open connections; try again", b"retry-after: 1\r\n"
)


@dataclass(frozen=True)
class ConnectionLimits:
    """Per-worker limits applied by :class:`GuardedH11Protocol`."""

    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    max_connections: int = MAX_DEFAULT_CONNECTIONS


_limits = ConnectionLimits()
#: Connections of this process still waiting for request headers, oldest first.
_waiting: OrderedDict[GuardedH11Protocol, None] = OrderedDict()


def configure(limits: ConnectionLimits) -> None:
    """Set the limits of the connections this process accepts from now on."""
    global _limits
    _limits = limits


def raise_fd_limit() -> int:
    """Raise the soft ``RLIMIT_NOFILE`` to the hard limit; the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def default_max_connections(fd_limit: int) -> int:
    """The connection cap that keeps a process with ``fd_limit`` descriptors under it."""
    return max(1, min(MAX_DEFAULT_CONNECTIONS, (fd_limit - FD_RESERVE) // FDS_PER_CONNECTION))


def accept_backlog(max_connections: int) -> int:
    """The listen backlog, which is also how many connections asyncio accepts in one go
    (before the cap can close any): no more than the cap, so a burst of connections holds
    at most twice the cap in descriptors."""
    return max(8, min(2048, max_connections))


def max_connections_allowed(fd_limit: int) -> int:
    """The largest cap accepted from ``--max-connections`` (a burst may hold twice the cap)."""
    return max(1, (fd_limit - FD_RESERVE) // 2)


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a header deadline and a per-process connection cap."""

    _header_timer: asyncio.TimerHandle | None = None
    _seen_cycle: Any = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:  # type: ignore[override]
        limits = _limits
        if len(self.connections) >= limits.max_connections and not self._evict_one():
            transport.write(_BUSY_503)  # type: ignore[attr-defined]
            transport.close()
            log.warning(
                "connection cap (%d) reached with every connection busy: answered 503", limits.max_connections
            )
            return
        super().connection_made(transport)  # type: ignore[arg-type]
        self._wait_for_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.transport is None:  # refused in connection_made
            return
        self._headers_arrived()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._check_new_request()

    def on_response_complete(self) -> None:
        if not self.transport.is_closing():
            self._wait_for_headers()  # the next request on this connection
        super().on_response_complete()
        self._check_new_request()

    # -- header deadline -----------------------------------------------------------

    def _check_new_request(self) -> None:
        if self.cycle is not None and self.cycle is not self._seen_cycle:
            self._seen_cycle = self.cycle
            self._headers_arrived()

    def _wait_for_headers(self) -> None:
        self._headers_arrived()
        self._header_timer = self.loop.call_later(_limits.header_timeout, self._header_deadline)
        _waiting[self] = None

    def _headers_arrived(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None
        _waiting.pop(self, None)

    def _header_deadline(self) -> None:
        self._header_timer = None
        _waiting.pop(self, None)
        if not self.transport.is_closing():
            log.info(
                "closed a connection that sent no complete request headers in %gs", _limits.header_timeout
            )
            self._close(_TIMEOUT_408)

    def _close(self, answer: bytes | None) -> None:
        if answer is not None:
            self.transport.write(answer)
        self.transport.close()

    @staticmethod
    def _evict_one() -> bool:
        """Close the connection waiting longest for its headers; False when there is none."""
        while _waiting:
            oldest, _ = _waiting.popitem(last=False)
            if oldest._header_timer is not None:
                oldest._header_timer.cancel()
                oldest._header_timer = None
            if not oldest.transport.is_closing():
                log.info("connection cap reached: closed the connection waiting longest for its headers")
                oldest._close(_TIMEOUT_408)
                return True
        return False


class BodyTimeout(ApiError):
    """The request body did not arrive within the body deadline (answered 408, then closed)."""

    def __init__(self, timeout: float) -> None:
        super().__init__(408, f"request body not received within {timeout:g}s; closing")


class BodyDeadline:
    """ASGI middleware: the request body must be complete within ``timeout`` seconds.

    A late body raises :class:`BodyTimeout` in the handler reading it, answered ``408``
    with ``connection: close`` (the rest of the request is never read). Only ``receive``
    calls that wait for body chunks are timed.
    """

    def __init__(self, app: ASGIApp, timeout: float) -> None:
        self.app = app
        self.timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        body_done = False

        async def timed_receive() -> Message:
            nonlocal body_done
            if body_done:
                return await receive()
            remaining = deadline - loop.time()
            try:
                if remaining <= 0:
                    raise TimeoutError
                message = await asyncio.wait_for(receive(), remaining)
            except TimeoutError:
                raise BodyTimeout(self.timeout) from None
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_done = True
            return message

        await self.app(scope, timed_receive, send)
