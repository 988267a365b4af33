"""Transcript files of the HTTP service: ``execution_summary`` paths confined to
``--transcripts-dir``, and private copies of inline transcripts."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from judge.server_bodies import ApiError
from judge.transcripts import discard_rendered


def confine_path(raw: Any, root: Path | None) -> str:
    """The resolved ``execution_summary`` path, which must be a file inside ``root``."""
    if not isinstance(raw, str) or not raw:
        raise ApiError(400, "execution_summary: must be a non-empty path string")
    if root is None:
        raise ApiError(
            400,
            "execution_summary: paths are not accepted by this service (it runs without "
            '--transcripts-dir); send the transcript inline in "transcript"',
        )
    if "\x00" in raw:
        raise ApiError(400, "execution_summary: path contains a NUL byte")
    candidate = Path(raw)
    if not candidate.is_absolute():
        candidate = root / candidate
    try:
        resolved = candidate.resolve(strict=False)
    except (OSError, RuntimeError) as exc:
        raise ApiError(400, f"execution_summary: cannot resolve path: {exc}") from None
    if not resolved.is_relative_to(root):
        raise ApiError(400, "execution_summary: path is outside the transcripts dir")
    try:
        is_file = resolved.is_file()
    except OSError as exc:  # e.g. a name too long
        raise ApiError(400, f"execution_summary: cannot use path: {exc.strerror or exc}") from None
    if not is_file:
        raise ApiError(400, "execution_summary: no such transcript file in the transcripts dir")
    return str(resolved)


def remove_private(path: Path) -> None:
    """Delete an inline transcript and any rendered copy the judge made of it."""
    discard_rendered(path)
    path.unlink(missing_ok=True)


def write_private(text: str) -> Path:
    """Write an inline transcript to a new 0600 temporary file."""
    fd, name = tempfile.mkstemp(prefix="judge-transcript-", suffix=".txt")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
    return Path(name)
