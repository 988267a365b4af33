"""One Stop round of a session at a time, across threads, tasks and processes.

Stores serialise rounds through ``StateStore.session_round`` (:mod:`judge.state`): the
SQLite store with :class:`LocalQueue` and :func:`session_lock` below, the PostgreSQL store
with a transaction-scoped advisory lock (:mod:`judge.state.postgres`).

A Stop round reads the session's rejection count, runs the hooks and stores the new
count. Two rounds of one session side by side would both start from the same count:
five concurrent rejected Stops with ``maxRejections: 5`` all answered "block, count 1"
and none was forced. :func:`session_lock` holds an exclusive ``flock`` on a per-session
file next to the state database for the whole round, so N concurrent rounds count
1..N exactly as N consecutive ones, whichever process (``judge run --state``,
``judge claude-code``, the service, the Python integration) runs them.

The lock is polled without blocking the event loop and the wait is bounded
(:class:`SessionBusy` after ``wait`` seconds). A crashed holder's lock is released by
the kernel. The holder removes the file before unlocking and a new holder checks it
still locks the file at the path, so lock files do not pile up.
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import hashlib
import os
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

#: Longest wait for another round of the same session (a round is bounded by its hook
#: timeouts; this only stops a wait on a stuck holder from lasting for ever).
DEFAULT_WAIT_SECONDS = 900.0
_POLL_FIRST = 0.002
_POLL_MAX = 0.05


class SessionBusy(OSError):
    """Another Stop round of the session held its lock for longer than the wait."""


def _busy(session_key: str, wait: float) -> SessionBusy:
    return SessionBusy(
        errno.EBUSY, f"another Stop of session {session_key!r} is still being judged (waited {wait:g} s)"
    )


class LocalQueue:
    """One holder per key in this process: an :class:`asyncio.Lock` per key (dropped when
    unused), so the rounds of one session queue in memory instead of polling a lock that
    lives outside the process. Stores take it before their cross-process lock.

    An asyncio lock belongs to one event loop, and a store may be shared by threads that
    each run their own (``StopGate.check_sync``, a threaded server): each loop queues its
    own rounds, and the cross-process lock, a separate ``flock`` per holder, orders the
    loops."""

    def __init__(self) -> None:
        self._locks: dict[tuple[asyncio.AbstractEventLoop, str], tuple[asyncio.Lock, int]] = {}
        self._guard = threading.Lock()  # the table is shared by the threads' loops

    @asynccontextmanager
    async def hold(self, key: str, wait: float = DEFAULT_WAIT_SECONDS) -> AsyncIterator[float]:
        """Hold ``key``; yields the part of ``wait`` left for the next lock."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        slot = (loop, key)
        with self._guard:
            lock, users = self._locks.get(slot) or (asyncio.Lock(), 0)
            self._locks[slot] = (lock, users + 1)
        try:
            try:
                async with asyncio.timeout(wait):
                    await lock.acquire()
            except TimeoutError:
                raise _busy(key, wait) from None
            try:
                yield max(wait - (loop.time() - started), 0.001)
            finally:
                lock.release()
        finally:
            with self._guard:
                lock, users = self._locks[slot]
                if users <= 1:
                    del self._locks[slot]
                else:
                    self._locks[slot] = (lock, users - 1)

    def __len__(self) -> int:
        return len(self._locks)


def lock_folder(state_path: Path) -> Path:
    """Where the lock files of the state database at ``state_path`` live."""
    return state_path.parent / f"{state_path.name}.locks"


def _try_lock(folder: Path, path: Path) -> int | None:
    """A descriptor holding the lock on ``path``, or None when another holder has it."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            return None
        raise
    try:
        same = os.fstat(fd).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        same = False
    if not same:  # the previous holder removed it after we opened it: lock the new one
        os.close(fd)
        return None
    return fd


@asynccontextmanager
async def session_lock(
    folder: Path, session_key: str, wait: float = DEFAULT_WAIT_SECONDS
) -> AsyncIterator[None]:
    """Hold the lock of ``session_key`` (files in ``folder``) for the body."""
    name = hashlib.sha256(session_key.encode("utf-8", "surrogatepass")).hexdigest()[:40] + ".lock"
    path = folder / name
    loop = asyncio.get_running_loop()
    give_up = loop.time() + wait
    delay = _POLL_FIRST
    while (fd := _try_lock(folder, path)) is None:
        if loop.time() >= give_up:
            raise _busy(session_key, wait)
        await asyncio.sleep(delay)
        delay = min(delay * 2, _POLL_MAX)
    try:
        yield
    finally:
        path.unlink(missing_ok=True)
        os.close(fd)  # closing releases the flock
