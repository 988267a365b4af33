"""What one ``judge claude-code`` call answers: text for stdout, lines for stderr, an exit code.

The adapter builds an :class:`Answer`; only :mod:`judge.cli.claude_code` (or the resident
judge's client) writes it out. Warnings raised anywhere while an answer is being built
(:func:`warn`) land in that answer, so concurrent events never mix their lines; outside of
one they go to the ``judge.claude_code`` logger.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

PREFIX = "judge claude-code"

_log = logging.getLogger("judge.claude_code")
_current: contextvars.ContextVar[Answer | None] = contextvars.ContextVar(
    "judge_claude_code_answer", default=None
)


@dataclass
class Answer:
    """stdout text (written as is), stderr lines (each ends with a newline) and the exit code.
    ``prefix`` starts each :func:`warn` line (the command that answers)."""

    stdout: str = ""
    stderr: list[str] = field(default_factory=list)
    code: int = 0
    prefix: str = PREFIX

    def say(self, output: dict[str, Any] | None) -> None:
        """Claude Code's JSON answer on stdout (``None``: print nothing)."""
        if output is not None:
            self.stdout += json.dumps(output, ensure_ascii=False) + "\n"

    def print(self, text: str = "") -> None:
        self.stdout += text + "\n"

    def error(self, text: str) -> None:
        self.stderr.append(text)


@contextlib.contextmanager
def collecting(answer: Answer) -> Iterator[Answer]:
    """Route :func:`warn` into ``answer`` while the block runs (in this context)."""
    token = _current.set(answer)
    try:
        yield answer
    finally:
        _current.reset(token)


def warn(message: str) -> None:
    """A line on stderr (Claude Code shows it in verbose mode)."""
    answer = _current.get()
    if answer is None:
        _log.warning("%s", message)
    else:
        answer.error(f"{answer.prefix}: {message}")
