"""SDK clients shared by every judgement on one event loop.

Building an SDK client (and opening its TCP/TLS connection) costs far more than the call
it makes, so :func:`shared_client` keeps one client per (event loop, key) — the key holds
the provider, base URL and API key, so a changed environment gets a different client.

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
from collections.abc import AsyncGenerator, Callable, Hashable
from contextlib import suppress
from typing import Any, Protocol, TypeVar


class Closable(Protocol):
    async def close(self) -> None: ...


C = TypeVar("C", bound=Closable)


class _LoopClients:
    def __init__(self) -> None:
        self.clients: dict[Hashable, Any] = {}
        self.closer: AsyncGenerator[None, None] | None = None


_lock = threading.Lock()
_loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopClients] = weakref.WeakKeyDictionary()


async def _close_at_shutdown(entry: _LoopClients) -> AsyncGenerator[None, None]:
    """Suspended until the loop's ``shutdown_asyncgens()``; then closes the loop's clients."""
    try:
        yield
    finally:
        clients = list(entry.clients.values())
        entry.clients.clear()
        for client in clients:
            with suppress(Exception):
                await client.close()


async def shared_client(key: Hashable, build: Callable[[], C]) -> C:
    """The running loop's client for ``key``, built with ``build()`` the first time."""
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
    with _lock:
        client: C | None = entry.clients.get(key)
        if client is None:
            client = entry.clients[key] = build()
    return client


async def close_clients() -> None:
    """Close and forget the running loop's shared clients now (e.g. before a long idle)."""
    loop = asyncio.get_running_loop()
    with _lock:
        entry = _loops.get(loop)
        clients = list(entry.clients.values()) if entry is not None else []
        if entry is not None:
            entry.clients.clear()
    for client in clients:
        with suppress(Exception):
            await client.close()


def client_count() -> int:
    """How many shared clients the running loop holds (for tests and diagnostics)."""
    entry = _loops.get(asyncio.get_running_loop())
    return 0 if entry is None else len(entry.clients)
