"""The rendered copy of a transcript that the judge's tools read.

:func:`prepare_transcript` renders a transcript (:mod:`judge.transcripts.formats`) once
into a private temporary folder, keyed by path, size, mtime and format, and hands back
that file (plain text is used as it is). Copies older than a day are evicted.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from judge.transcripts.formats import RENDER_VERSION, detect_format, render_lines

CACHE_MAX_AGE_SECONDS = 24 * 3600


def _cache_dir() -> Path:
    uid = os.getuid() if hasattr(os, "getuid") else 0
    folder = Path(tempfile.gettempdir()) / f"judge-transcripts-{uid}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        info = folder.stat()
        if hasattr(os, "getuid") and (info.st_uid != uid or info.st_mode & 0o077):
            raise PermissionError(f"{folder} is not private")
    except OSError:
        folder = Path(tempfile.mkdtemp(prefix="judge-transcripts-"))
    return folder


def _evict_old(folder: Path) -> None:
    cutoff = time.time() - CACHE_MAX_AGE_SECONDS
    for entry in folder.glob("*.txt"):
        with contextlib.suppress(OSError):
            if entry.stat().st_mtime < cutoff:
                entry.unlink()


#: Folders whose name starts with this hold one private transcript (the service's inline
#: transcripts): its rendered copy is kept in the same folder, so removing the folder
#: removes every copy, even one a late render writes after the request ended.
PRIVATE_PREFIX = "judge-private-"


def _rendered_target(source: Path, fmt: str) -> Path:
    """Where the rendered copy of ``source`` (this size and mtime) is cached."""
    info = source.stat()
    key = f"{source.resolve()}|{info.st_size}|{info.st_mtime_ns}|{fmt}|{RENDER_VERSION}"
    folder = source.parent if source.parent.name.startswith(PRIVATE_PREFIX) else _cache_dir()
    return folder / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.txt"


def discard_rendered(path: str | Path) -> None:
    """Remove the cached rendered copy of the transcript at ``path``, if any (call it
    before deleting a private transcript, so no copy of its content outlives it)."""
    source = Path(path)
    try:
        fmt = detect_format(source)
        if fmt != "text":
            _rendered_target(source, fmt).unlink(missing_ok=True)
    except OSError:
        pass


def prepare_transcript(path: str | Path, check: Callable[[], None] | None = None) -> Path:
    """A readable text version of the transcript at ``path`` for the judge's tools.

    Plain text returns ``path`` itself; other shapes are rendered once into a cached
    temporary file (re-rendered when the source changes). Raises ``OSError`` when the
    file cannot be read (or is not a regular file). ``check`` is called every few
    thousand lines while rendering: it raises to stop the work (a judgement's deadline).
    """
    source = Path(path)
    fmt = detect_format(source)
    if fmt == "text":
        return source
    target = _rendered_target(source, fmt)
    if target.exists():
        return target
    folder = target.parent
    _evict_old(folder)
    descriptor, partial = tempfile.mkstemp(dir=folder, suffix=".part")
    try:
        # errors="replace": a JSON "\ud800" in the transcript is a lone surrogate once parsed
        with open(descriptor, "w", encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(render_lines(source, fmt)):
                if check is not None and number % 4096 == 0:
                    check()
                handle.write(line)
                handle.write("\n")
        os.replace(partial, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise
    return target
