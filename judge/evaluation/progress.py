"""Progress of an eval run: :class:`Progress` counts what the run produced (done/total,
errors, cache hits, tokens, the time left) and displays nothing; the command line's
displays (a rich bar on a terminal, plain lines otherwise) are :mod:`judge.cli.progress`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from judge.evaluation.runner import CaseResult


def clock(seconds: float | None) -> str:
    if seconds is None:
        return "-:--:--"
    s = int(seconds + 0.5)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class Progress:
    """Counts what a run produced; the base class displays nothing (``--quiet``)."""

    def __init__(self) -> None:
        self.total = 0
        self.done = 0
        self.errors = 0
        self.cache_hits = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.started = time.monotonic()
        self._done_at_start = 0
        self.note = ""

    def start(self, total: int, done: int = 0) -> None:
        """A run of ``total`` results begins, ``done`` of them already present (resume)."""
        self.total = total
        self.done = done
        self._done_at_start = done
        self.started = time.monotonic()
        self._render(force=True)

    def advance(self, result: CaseResult) -> None:
        """One more result is in."""
        self.done += 1
        self.errors += result.error is not None
        self.cache_hits += result.cached
        if not result.cached:  # tokens spent by this run
            self.input_tokens += result.usage.input_tokens
            self.output_tokens += result.usage.output_tokens
        self._render(force=False)

    def finish(self) -> None:
        """The run ended (completed or interrupted)."""
        self._render(force=True)
        self._close()

    def status(self, text: str) -> None:
        """What the run is waiting for (``judge eval --batch``: the batches' state)."""
        self.note = text
        self._render(force=True)

    def eta(self) -> float | None:
        """Seconds left at the current rate (None before the first result)."""
        fresh = self.done - self._done_at_start
        if fresh <= 0:
            return None
        rate = fresh / max(time.monotonic() - self.started, 1e-9)
        return (self.total - self.done) / rate

    def summary(self) -> str:
        pct = 100.0 * self.done / self.total if self.total else 100.0
        width = len(str(self.total))
        return (
            f"[{self.done:>{width}}/{self.total}] {pct:5.1f}%  errors {self.errors}  "
            f"cache hits {self.cache_hits}  tokens {self.input_tokens}/{self.output_tokens}  "
            f"eta {clock(self.eta())}"
        )

    def _render(self, force: bool) -> None:
        return None

    def _close(self) -> None:
        return None
