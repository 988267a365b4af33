"""Which Claude Code is asking: the version its session transcript records, and what that
version understands.

Claude Code passes no version to a hook, but every row it writes into the session's JSONL
transcript carries ``"version": "2.1.332"``. :func:`session_version` reads the rows at the
end of the file (a session resumed with a newer Claude Code records the newer one from
then on) and takes the **lowest** version among them: an agent can append rows to its own
transcript, and a forged higher version must not make judge answer in a form the running
Claude Code ignores (a lower one only costs the older form, which every version reads).

:func:`stop_feedback_form` picks how a Stop rejection continues the turn:
``hookSpecificOutput.additionalContext`` from 2.1.163 (the agent gets the reason once,
without the hook's command line, and the user no "stop hook problem" notice), else
``decision: "block"`` (every supported version; unknown versions too).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Literal

#: Claude Code continues a turn on a Stop/SubagentStop hook's ``additionalContext`` from here.
STOP_CONTEXT_SINCE = (2, 1, 163)
#: Bytes read from the end of a transcript, and most rows whose version is compared.
TAIL_BYTES = 1024 * 1024
MAX_ROWS = 50
#: Bytes read from the start when the tail holds no row with a version (one huge row).
HEAD_BYTES = 256 * 1024

StopForm = Literal["additionalContext", "block"]


def parse_version(text: object) -> tuple[int, ...] | None:
    """``"2.1.332"`` -> ``(2, 1, 332)``; None for anything that is not such a version."""
    if not isinstance(text, str) or not 0 < len(text) <= 40:
        return None
    parts = text.strip().split("-", 1)[0].split(".")
    if not 1 <= len(parts) <= 4 or not all(p.isdigit() for p in parts):
        return None
    return tuple(int(p) for p in parts)


def _versions(lines: list[bytes]) -> list[tuple[int, ...]]:
    found: list[tuple[int, ...]] = []
    for raw in lines:
        if len(found) >= MAX_ROWS:
            break
        try:
            row = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        version = parse_version(row.get("version")) if isinstance(row, dict) else None
        if version is not None:
            found.append(version)
    return found


def session_version(path: Path | None) -> tuple[int, ...] | None:
    """The Claude Code version the session's last rows record (the lowest of them), or None
    when the transcript is missing, unreadable or records none."""
    if path is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None  # a FIFO or a device is no transcript
        size = info.st_size
        start = max(0, size - TAIL_BYTES)
        tail = os.pread(fd, size - start, start)
        lines = tail.split(b"\n")[1 if start else 0 :]  # (a row cut by the start is dropped)
        found = _versions(list(reversed(lines)))
        if not found and start:
            found = _versions(os.pread(fd, HEAD_BYTES, 0).split(b"\n")[:-1])
    except OSError:
        return None
    finally:
        os.close(fd)
    return min(found) if found else None


def stop_feedback_form(version: tuple[int, ...] | None) -> StopForm:
    """How to send the agent back on this Claude Code version (see the module docstring)."""
    return "additionalContext" if version is not None and version >= STOP_CONTEXT_SINCE else "block"
