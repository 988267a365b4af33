"""Ctrl-C during ``judge eval``: stop cleanly once, whatever follows.

The first SIGINT cancels the run (the finished results stay in ``results.jsonl``; the
command exits 2 and says how to ``--resume``). asyncio's own handling raises
``KeyboardInterrupt`` at a second Ctrl-C wherever the program happens to be — inside
the cancellation, while the results file is closed, or during interpreter shutdown,
where it makes the process die by SIGINT instead of exiting 2. Here a later SIGINT
during the cancellation only prints a note (stopping is already under way), and after
it SIGINT is ignored until the process exits.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Coroutine
from types import FrameType
from typing import Any, TypeVar

_T = TypeVar("_T")

STOPPING_NOTE = "judge eval: stopping; the finished results are kept (press Ctrl-\\ to abort)"


def ignore_interrupts() -> None:
    """Ignore SIGINT from now until the process exits (after a first Ctrl-C was handled)."""
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread
        pass


class InterruptGuard:
    """Runs a coroutine with graceful SIGINT handling (in the main thread; elsewhere a
    plain :func:`asyncio.run`). ``interrupted`` tells whether a SIGINT stopped it;
    ``note`` gets :data:`STOPPING_NOTE` at a second Ctrl-C."""

    def __init__(self, note: Callable[[str], None] = lambda line: None) -> None:
        self.note = note
        self.interrupted = False
        self._noted = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        if not self.interrupted:
            self.interrupted = True
            if self._loop is not None and self._task is not None and not self._loop.is_closed():
                self._loop.call_soon_threadsafe(self._task.cancel)
                return
            raise KeyboardInterrupt  # before or after the run: the ordinary behaviour
        if not self._noted:
            self._noted = True
            self.note(STOPPING_NOTE)

    def run(self, coro: Coroutine[Any, Any, _T]) -> _T | None:
        """The coroutine's result, or None when a SIGINT cancelled it."""

        async def main() -> _T:
            self._loop = asyncio.get_running_loop()
            self._task = asyncio.current_task()
            return await coro

        try:
            previous = signal.signal(signal.SIGINT, self._on_sigint)
        except ValueError:  # not the main thread: no signal handling of ours
            return asyncio.run(coro)
        try:
            return asyncio.run(main())
        except asyncio.CancelledError:
            if self.interrupted:
                return None
            raise
        finally:
            self._loop = self._task = None
            # Once interrupted, SIGINT stays ignored until the process exits (with code 2):
            # a Python-level handler is reset to the default during interpreter shutdown,
            # where a late Ctrl-C would kill the process by SIGINT; SIG_IGN stays.
            signal.signal(signal.SIGINT, signal.SIG_IGN if self.interrupted else previous)
