"""One Stop round of a session at a time, across threads, tasks and processes.

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
    name = hashlib.sha256(session_key.encode("utf-8")).hexdigest()[:40] + ".lock"
    path = folder / name
    loop = asyncio.get_running_loop()
    give_up = loop.time() + wait
    delay = _POLL_FIRST
    while (fd := _try_lock(folder, path)) is None:
        if loop.time() >= give_up:
            raise SessionBusy(
                errno.EBUSY,
                f"another Stop of session {session_key!r} is still being judged (waited {wait:g} s)",
            )
        await asyncio.sleep(delay)
        delay = min(delay * 2, _POLL_MAX)
    try:
        yield
    finally:
        path.unlink(missing_ok=True)
        os.close(fd)  # closing releases the flock
