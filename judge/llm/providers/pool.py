"""SDK clients reused by the judgements on one event loop.

Building an SDK client (and opening its TCP/TLS connection) costs far more than the call
it makes, so :func:`lease_client` reuses clients per (event loop, key) — the key holds
the provider, base URL and API key, so a changed environment gets a different client.
One client serves up to :data:`PER_CLIENT` judgements at a time; more concurrent
judgements open more clients, which stay for later judgements.

A client's connections belong to the loop that opened them. Each loop's clients are
closed when that loop shuts down (``asyncio.run`` / ``asyncio.Runner`` and most loop
runners call ``loop.shutdown_asyncgens()``: a suspended async generator registered per
loop closes them then), and the table is keyed by a weak reference to the loop, so
nothing is reused across loops or keeps a finished loop alive.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Hashable
from contextlib import asynccontextmanager, suppress
from typing import Any, Protocol, TypeVar


class Closable(Protocol):
    async def close(self) -> None: ...


C = TypeVar("C", bound=Closable)


#: In-flight judgements per client before another client is opened. httpcore checks
#: every idle connection of its pool on each request, so at concurrency 100 one client
#: with 100 connections costs ~1.6x the CPU per call of ten clients with ten each.
PER_CLIENT = 10


class _Slot:
    def __init__(self, client: Any) -> None:
        self.client = client
        self.in_flight = 0


class _LoopClients:
    def __init__(self) -> None:
        self.clients: dict[Hashable, list[_Slot]] = {}
        self.closer: AsyncGenerator[None, None] | None = None

    def take_all(self) -> list[Any]:
        clients = [slot.client for group in self.clients.values() for slot in group]
        self.clients.clear()
        return clients


_lock = threading.Lock()
_loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopClients] = weakref.WeakKeyDictionary()


async def _close(clients: list[Any]) -> None:
    for client in clients:
        with suppress(Exception):
            await client.close()


async def _close_at_shutdown(entry: _LoopClients) -> AsyncGenerator[None, None]:
    """Suspended until the loop's ``shutdown_asyncgens()``; then closes the loop's clients."""
    try:
        yield
    finally:
        with _lock:
            clients = entry.take_all()
        await _close(clients)


async def _loop_clients() -> _LoopClients:
    loop = asyncio.get_running_loop()
    with _lock:
        entry = _loops.get(loop)
        if entry is None:
            entry = _loops[loop] = _LoopClients()
        closer = None
        if entry.closer is None:
            closer = entry.closer = _close_at_shutdown(entry)
    if closer is not None:
        await closer.__anext__()  # registers it with the loop's async-generator hooks
    return entry


@asynccontextmanager
async def lease_client(key: Hashable, build: Callable[[], C]) -> AsyncIterator[C]:
    """A client of the running loop for ``key`` (built with ``build()`` when every one
    already serves :data:`PER_CLIENT` leases), held for the ``async with`` block."""
    entry = await _loop_clients()
    with _lock:
        group = entry.clients.setdefault(key, [])
        slot = min(group, key=lambda s: s.in_flight, default=None)
        if slot is None or slot.in_flight >= PER_CLIENT:
            slot = _Slot(build())
            group.append(slot)
        slot.in_flight += 1
    try:
        yield slot.client
    finally:
        slot.in_flight -= 1


async def close_clients() -> None:
    """Close and forget the running loop's clients now (when no judgement is running)."""
    entry = _loops.get(asyncio.get_running_loop())
    if entry is not None:
        with _lock:
            clients = entry.take_all()
        await _close(clients)


def client_count() -> int:
    """How many clients the running loop holds (for tests and diagnostics)."""
    entry = _loops.get(asyncio.get_running_loop())
    return 0 if entry is None else sum(len(group) for group in entry.clients.values())
