"""Slow, idle and non-reading clients cannot hold the service: read and write deadlines
and a connection cap.

uvicorn times out nothing before a request's headers are complete, and nothing while a
body trickles in, so a few hundred half-sent requests used to hold every file descriptor
of the process. Here:

* :class:`GuardedH11Protocol` (uvicorn's h11 protocol plus two rules): the request
  headers must arrive within ``header_timeout`` seconds of the connection opening (or of
  the previous response on a kept-alive connection), else the connection gets a 408 and
  is closed; and at most ``max_connections`` connections are open per worker. At the cap a
  new connection takes the place of the oldest one still waiting for its headers (idle
  keep-alive connections included), else of the one stuck longest writing to a client
  that does not read (below); when every connection is busy with a request, the new one
  is answered 503 and closed at once. Either way the descriptor is freed at once, so the
  process never reaches its file descriptor limit.
* a write deadline: a connection whose client does not take what was written to it (it
  never reads, or pipelines requests for large answers and reads none of them) is
  aborted once ``write_timeout`` seconds pass without its unsent data (in the process
  and in the kernel's send queue) going down (checked every second for every
  connection; a client that reads slowly but reads keeps it). Aborted, not closed: a
  close waits until the data is sent, which such a client never lets happen.
* a connection's next request (pipelined, or sent after an answer it has not read)
  starts only once less than :data:`UNSENT_LIMIT` bytes of earlier answers are unsent,
  so a client that reads nothing gets little work done; meanwhile the connection counts
  as stuck on its client (evicted first at the cap, then aborted at its write deadline).
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
import fcntl
import logging
import resource
import struct
import termios
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
#: Seconds a connection may wait, without progress, for its client to take what was written.
DEFAULT_WRITE_TIMEOUT = 30.0
#: Seconds between two checks of every connection's unsent data.
WRITE_CHECK_SECONDS = 1.0
#: Unsent bytes (in the process and in the kernel's send queue) above which a connection's
#: next request waits: a client reading nothing gets only this much work done.
UNSENT_LIMIT = 256 * 1024
#: Seconds between two checks of a connection whose next request waits for its client.
HOLD_CHECK_SECONDS = 0.1
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
    write_timeout: float = DEFAULT_WRITE_TIMEOUT


_limits = ConnectionLimits()
#: Connections of this process still waiting for request headers, oldest first.
_waiting: OrderedDict[GuardedH11Protocol, None] = OrderedDict()
#: Connections whose client stopped taking their answers (writing paused), oldest first.
_stalled: OrderedDict[GuardedH11Protocol, None] = OrderedDict()
#: Every open connection of this process.
_open: set[GuardedH11Protocol] = set()
#: The timer checking every connection's unsent data, while there are connections.
_write_check: asyncio.TimerHandle | None = None


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
    """uvicorn's h11 protocol with header and write deadlines and a per-process connection cap."""

    _header_timer: asyncio.TimerHandle | None = None
    _hold_timer: asyncio.TimerHandle | None = None
    _seen_cycle: Any = None
    #: (when the unsent data last went down or appeared, how much there was then)
    _progress: tuple[float, int] | None = None

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
        _open.add(self)
        self._wait_for_headers()
        _watch_writes(self.loop)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.transport is None:  # refused in connection_made
            return
        self._headers_arrived()
        if self._hold_timer is not None:
            self._hold_timer.cancel()
            self._hold_timer = None
        _stalled.pop(self, None)
        _open.discard(self)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._check_new_request()

    def on_response_complete(self) -> None:
        if not self.transport.is_closing():
            self._wait_for_headers()  # the next request on this connection
        super().on_response_complete()
        self._check_new_request()

    def handle_events(self) -> None:
        idle = self.cycle is None or self.cycle.response_complete
        if idle and self._unsent() > UNSENT_LIMIT:
            self._hold_requests()  # the next request waits until the client takes its answers
            return
        super().handle_events()

    def pause_writing(self) -> None:
        super().pause_writing()
        _stalled[self] = None

    def resume_writing(self) -> None:
        super().resume_writing()
        _stalled.pop(self, None)

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
        if self in _stalled:  # the client takes nothing: a close would wait for it forever
            self.transport.abort()
            return
        if answer is not None:
            self.transport.write(answer)
        self.transport.close()

    # -- write deadline ------------------------------------------------------------

    def _unsent(self) -> int:
        """Bytes written to this connection that its client has not taken yet."""
        return int(self.transport.get_write_buffer_size()) + _kernel_send_queue(self.transport)

    def _hold_requests(self) -> None:
        self.flow.pause_reading()
        _stalled[self] = None
        if self._hold_timer is None:
            self._hold_timer = self.loop.call_later(HOLD_CHECK_SECONDS, self._release_requests)

    def _release_requests(self) -> None:
        self._hold_timer = None
        if self.transport.is_closing():
            return
        if self._unsent() > UNSENT_LIMIT:
            self._hold_requests()
            return
        _stalled.pop(self, None)
        self.flow.resume_reading()
        self.handle_events()
        self._check_new_request()

    def _check_unsent(self, now: float) -> None:
        """Abort the connection when its unsent data has not gone down for ``write_timeout``."""
        unsent = self._unsent()
        if unsent == 0:
            self._progress = None
            return
        if self._progress is None or unsent < self._progress[1]:
            self._progress = (now, unsent)
            return
        if now - self._progress[0] >= _limits.write_timeout:
            log.info(
                "aborted a connection whose client took none of its %d unsent bytes in %gs",
                unsent,
                _limits.write_timeout,
            )
            self.transport.abort()

    @staticmethod
    def _evict_one() -> bool:
        """Close the connection waiting longest for its headers, else abort the one stuck
        longest writing to a client that does not read; False when there is neither."""
        while _waiting:
            oldest, _ = _waiting.popitem(last=False)
            if oldest._header_timer is not None:
                oldest._header_timer.cancel()
                oldest._header_timer = None
            if not oldest.transport.is_closing():
                log.info("connection cap reached: closed the connection waiting longest for its headers")
                oldest._close(_TIMEOUT_408)
                return True
        while _stalled:
            oldest, _ = _stalled.popitem(last=False)
            log.info("connection cap reached: aborted the connection stuck longest on a client not reading")
            oldest.transport.abort()
            return True
        return False


def _kernel_send_queue(transport: asyncio.BaseTransport) -> int:
    """Bytes in the socket's send queue not yet taken by the peer (0 where unknown)."""
    sock = transport.get_extra_info("socket")
    if sock is None:
        return 0
    try:
        queued: int = struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0"))[0]
    except (OSError, ValueError):
        return 0
    return queued


def _watch_writes(loop: asyncio.AbstractEventLoop) -> None:
    """Check every connection's unsent data each :data:`WRITE_CHECK_SECONDS` while there are any."""
    global _write_check
    if _write_check is not None:
        return

    def check() -> None:
        global _write_check
        _write_check = None
        now = loop.time()
        connections = list(_open)
        for connection in connections:
            connection._check_unsent(now)
        if connections:
            _write_check = loop.call_later(WRITE_CHECK_SECONDS, check)

    _write_check = loop.call_later(WRITE_CHECK_SECONDS, check)


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
