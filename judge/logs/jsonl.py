"""Append-only JSONL files: one record per line, safe with concurrent writers and crashes.

Each record is one line written with a single ``write`` on an ``O_APPEND`` descriptor
under an exclusive ``flock``, so concurrent writers never interleave. A writer killed
in the middle of a large write (``kill -9``, power loss) can still leave part of a
line at the end; the next writer sees the file does not end with a newline and starts
its record on a new line, so only the torn record is lost, and :func:`read_jsonl`
skips such a line with a warning.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from judge.files import load_json, open_regular

_log = logging.getLogger("judge.audit")

#: Longest record :func:`read_jsonl` reads (a longer line is skipped, never held whole).
MAX_RECORD_BYTES = 256 * 1024 * 1024


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def append_jsonl(path: Path, record: dict[str, Any]) -> None:
    """Append one JSON line (one write, under a lock), on a new line after a torn one."""
    line = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode("utf-8", errors="replace")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                line = b"\n" + line  # a writer died mid-record: keep ours off its line
            written = 0
            while written < len(line):
                written += os.write(fd, line[written:])
            os.fsync(fd)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _skip_line(handle: BinaryIO) -> int:
    """Read past the rest of a line in bounded pieces; how many bytes that was."""
    skipped = 0
    while piece := handle.readline(1 << 20):
        skipped += len(piece)
        if piece.endswith(b"\n"):
            break
    return skipped


def read_jsonl(path: str | Path) -> Iterator[dict[str, Any]]:
    """The records of a JSONL log, in order. A line that is not a JSON object (a record
    torn by a crash) is skipped with a warning on the ``judge.logs.audit`` logger."""
    try:
        handle = open_regular(path, "log")
    except FileNotFoundError:
        return
    with handle:
        number = 0
        while raw := handle.readline(MAX_RECORD_BYTES + 1):
            number += 1
            if len(raw) > MAX_RECORD_BYTES and not raw.endswith(b"\n"):
                size = len(raw) + _skip_line(handle)
                _log.warning(
                    "%s:%d: skipped a line of %d bytes (records are read up to %d)",
                    path,
                    number,
                    size,
                    MAX_RECORD_BYTES,
                )
                continue
            if not raw.strip():
                continue
            try:
                record = load_json(raw)
            except ValueError:  # torn, or nested too deeply
                record = None
            if isinstance(record, dict):
                yield record
            else:
                _log.warning(
                    "%s:%d: skipped a line that is not a JSON record (%d bytes; torn by a crash?)",
                    path,
                    number,
                    len(raw),
                )
