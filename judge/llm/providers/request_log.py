"""Every request the judge sends to a model, and its answer, as JSON lines
(``JUDGE_REQUEST_LOG=FILE``).

For seeing what a model was asked and what it said: why a local model allowed what it
should have blocked, what a tool result looked like, which feature a server rejected.
One line per HTTP request of the OpenAI and Anthropic providers (a request repeated
without a rejected feature is two lines)::

    {"time": "2026-12-01T10:00:00.123+00:00", "pid": 4242, "model": "openai:qwen",
     "url": "http://127.0.0.1:8089/v1", "seconds": 4.21,
     "request": {...the body as sent...}, "response": {...the body as received...}}

A failed request has ``"error"`` (``"HTTP 400: ..."``, a timeout, ``"cancelled"`` when
the hook's deadline ran out) instead of ``"response"``.

The file holds prompts, final answers and transcript excerpts: it is created readable by
its owner only, and appended to (never truncated). API keys are not in it: they travel in
headers, which are not logged. Each line is appended with one write, so the worker
processes of ``judge eval --workers`` and ``judge serve --workers`` can share one file. A
file that cannot be written is a hook error naming the file, never a silent gap.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from judge.errors import HookError

REQUEST_LOG_VAR = "JUDGE_REQUEST_LOG"


class RequestLog:
    """Appends one JSON line per model request to :attr:`path`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._append(b"")  # a path that cannot be written fails now, not at the first request

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> RequestLog | None:
        """The log ``JUDGE_REQUEST_LOG`` names, or ``None`` when it is unset or empty."""
        raw = env.get(REQUEST_LOG_VAR, "").strip()
        return cls(Path(raw).expanduser()) if raw else None

    def _append(self, data: bytes) -> None:
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                if data:
                    os.write(fd, data)
            finally:
                os.close(fd)
        except OSError as exc:
            raise HookError(f"{REQUEST_LOG_VAR}: cannot write {self.path}: {exc.strerror or exc}") from None

    def write(
        self,
        model: str,
        url: str,
        request: Mapping[str, Any],
        seconds: float,
        *,
        response: object = None,
        error: BaseException | None = None,
    ) -> None:
        """Append one request and its answer (``response``) or what went wrong (``error``)."""
        line: dict[str, Any] = {
            "time": datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds"),
            "pid": os.getpid(),
            "model": model,
            "url": url,
            "seconds": round(seconds, 3),
            "request": request,
        }
        if error is None:
            line["response"] = response
        else:
            line["error"] = describe(error)
        text = json.dumps(line, ensure_ascii=False, default=str) + "\n"
        self._append(text.encode("utf-8", errors="replace"))


def describe(error: BaseException) -> str:
    """A failed request in a few words: ``HTTP 400: ...``, the error's type and text, or
    ``cancelled``."""
    if isinstance(error, asyncio.CancelledError):
        return "cancelled"
    status = getattr(error, "status_code", None)
    if isinstance(status, int):
        return f"HTTP {status}: {error}"
    return f"{type(error).__name__}: {error}"
