"""Progress displays for eval runs on stderr: a rich bar on a terminal, plain lines otherwise,
or nothing (``--quiet``). Each shows done/total, errors, cache hits, tokens and the
estimated time left (:class:`judge.evaluation.progress.Progress` counts them).
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from judge.evaluation.progress import Progress


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
