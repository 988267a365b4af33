"""Stop rounds of one session, one at a time, in a worker and across worker processes."""

from __future__ import annotations

import asyncio
import errno
import fcntl
import hashlib
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path


class SessionLocks:
    """Stop rounds of one session, one at a time, in this process and across workers.

    A round reads the session's rejection count, runs the hooks and stores the new count;
    two rounds of one session running side by side would both start from the same count.
    Held in order, N concurrent rejected Stops of a session count 1..N (the one reaching
    ``maxRejections`` is the single forced stop), exactly as N consecutive ones.

    In the process: an :class:`asyncio.Lock` per session. Across worker processes:
    ``flock`` on ``locks/<hash>.lock`` in the data dir, polled without blocking a thread.
    The holder unlinks the file before unlocking and a new holder checks that the file it
    locked is still the one at the path, so lock files never pile up.
    """

    POLL_FIRST = 0.002
    POLL_MAX = 0.05

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @asynccontextmanager
    async def hold(self, session_id: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(session_id) or (asyncio.Lock(), 0)
        self._locks[session_id] = (lock, users + 1)
        try:
            async with lock:
                path = self.folder / (hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:40] + ".lock")
                fd = await self._lock_file(path)
                try:
                    yield
                finally:
                    path.unlink(missing_ok=True)
                    os.close(fd)  # closing releases the flock
        finally:
            lock, users = self._locks[session_id]
            if users <= 1:
                del self._locks[session_id]
            else:
                self._locks[session_id] = (lock, users - 1)

    async def _lock_file(self, path: Path) -> int:
        delay = self.POLL_FIRST
        while True:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.POLL_MAX)
                continue
            try:
                same = os.fstat(fd).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                return fd
            os.close(fd)  # the previous holder removed it: lock the new file
