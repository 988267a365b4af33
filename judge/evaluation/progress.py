"""Progress display for eval runs: a rich bar on a terminal, plain lines otherwise, or nothing.

Each shows done/total, errors, cache hits, tokens and the estimated time left.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from judge.evaluation.runner import CaseResult


def _clock(seconds: float | None) -> str:
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
            f"eta {_clock(self.eta())}"
        )

    def _render(self, force: bool) -> None:
        return None

    def _close(self) -> None:
        return None


class PlainProgress(Progress):
    """One line now and then (every ``every_s`` seconds or 10% of the run) for logs and CI."""

    def __init__(self, stream: TextIO | None = None, every_s: float = 5.0) -> None:
        super().__init__()
        self.stream = stream if stream is not None else sys.stderr
        self.every_s = every_s
        self._last_time = 0.0
        self._last_done = -1
        self._last_note = ""

    def status(self, text: str) -> None:
        self.note = text
        if text != self._last_note:  # each change of the batches' state, once
            print(f"{self.summary()}  {text}", file=self.stream, flush=True)
            self._last_note = text

    def _render(self, force: bool) -> None:
        now = time.monotonic()
        step = max(1, self.total // 10)
        due = now - self._last_time >= self.every_s or self.done - self._last_done >= step
        if (force or due) and self.done != self._last_done:
            print(self.summary(), file=self.stream, flush=True)
            self._last_time = now
            self._last_done = self.done


class RichProgress(Progress):
    """A live rich progress bar (terminals)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        super().__init__()
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
        from rich.progress import Progress as RichBar

        self._bar = RichBar(
            TextColumn("[bold]eval"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("errors {task.fields[errors]}"),
            TextColumn("cache hits {task.fields[hits]}"),
            TextColumn("tokens {task.fields[tokens]}"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[note]}"),
            console=Console(file=stream if stream is not None else sys.stderr),
            transient=False,
        )
        self._task = self._bar.add_task("eval", total=1, errors=0, hits=0, tokens="0/0", note="")
        self._running = False

    def _render(self, force: bool) -> None:
        if not self._running:
            self._bar.start()
            self._running = True
        self._bar.update(
            self._task,
            total=max(self.total, 1),
            completed=self.done,
            errors=self.errors,
            hits=self.cache_hits,
            tokens=f"{self.input_tokens}/{self.output_tokens}",
            note=self.note,
        )

    def _close(self) -> None:
        if self._running:
            self._bar.stop()
            self._running = False


def make_progress(quiet: bool = False, stream: TextIO | None = None) -> Progress:
    """Nothing with ``quiet``; a rich bar on a terminal; plain lines otherwise."""
    if quiet:
        return Progress()
    out = stream if stream is not None else sys.stderr
    if out.isatty():
        return RichProgress(out)
    return PlainProgress(out)
