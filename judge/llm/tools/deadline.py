"""How long and how much one tool call may work: a deadline and a cancel flag.

A judgement's tools run in threads. Python cannot kill a thread, so the tools check
their :class:`ToolDeadline` between bounded pieces of work (a block read, one search call)
and stop with :class:`ToolCancelled` when the hook's deadline has passed or the
judgement was cancelled. Each piece is bounded in bytes and regex work, so a tool
stops within a fraction of a second of its hook.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field


class ToolCancelled(Exception):
    """The judgement this tool call belongs to is over (deadline or cancellation)."""


@dataclass
class ToolDeadline:
    """Deadline (``time.monotonic()`` seconds) and cancel flag of one judgement's tools."""

    deadline: float = float("inf")
    cancelled: threading.Event = field(default_factory=threading.Event)

    def check(self) -> None:
        """Raise :class:`ToolCancelled` when the work must stop."""
        if self.cancelled.is_set() or time.monotonic() >= self.deadline:
            raise ToolCancelled

    def cancel(self) -> None:
        self.cancelled.set()

    def left(self) -> float:
        return self.deadline - time.monotonic()
