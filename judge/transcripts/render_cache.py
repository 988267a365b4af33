"""Incremental rendering of Claude Code transcripts: a later Stop renders only what was appended.

Claude Code's session transcript only grows (one JSON object per line, appended), and every
Stop of a long session would otherwise re-render all of it before the first request to the
judge. This module keeps, per transcript, the rendered text so far and where rendering
stopped, in a private cache folder (``render-cache`` beside the adapter's state file, 0700,
files 0600):

* ``KEY.txt`` — the rendered text (append-only while the transcript only grows);
* ``KEY.json`` — the transcript's identity (real path, device, inode), the byte offset
  rendered so far, a digest of the bytes just before it, the size of ``KEY.txt`` that goes
  with it, and the renderer's state (:meth:`ClaudeCodeRenderer.state`).

``KEY`` is a digest of the transcript's real path, device and inode. A cache entry is used
only when the transcript is still the same file and the bytes before the offset are
unchanged; otherwise (rewritten, truncated, replaced) it is rendered again from the start.
Updates happen under an exclusive ``flock`` on ``KEY.lock``; the text is written before the
metadata, and a ``KEY.txt`` longer than its metadata says (a crash mid-update) is cut back.

Only complete lines (ending with a newline) are cached. A transcript whose last line has no
newline yet is rendered whole into a private temporary file instead, as without a cache.
Entries not used for :data:`MAX_AGE_SECONDS` and the oldest beyond :data:`MAX_ENTRIES` are
removed. The cache holds a readable copy of transcripts that already sit in the user's
Claude Code folder, with the same owner-only permissions.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import os
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from judge.files import open_regular
from judge.transcripts.claude_code import ClaudeCodeRenderer
from judge.transcripts.formats import MAX_LINE_BYTES

#: Cache entries kept at most (the least recently used beyond this are removed).
MAX_ENTRIES = 32
#: Cache entries unused for this long are removed.
MAX_AGE_SECONDS = 14 * 24 * 3600
#: Bytes before the offset whose digest proves the transcript was only appended to.
_TAIL_CHECK_BYTES = 4096
_FORMAT = 3  # 2: user rows Claude Code wrote are labelled by their origin; 3: turns no row follows
_READ_CHUNK = 1 << 20


class RenderError(OSError):
    """The transcript could not be read."""


class RenderCancelled(Exception):
    """The render was asked to stop (the hook's deadline passed, or a signal came)."""


class CancelFlag(threading.Event):
    """Set to stop a render; knows the temporary files the render made, so whoever
    cancels it can remove them even if the render does not get to."""

    def __init__(self) -> None:
        super().__init__()
        self.files: list[Path] = []


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _check(cancel: threading.Event | None) -> None:
    if cancel is not None and cancel.is_set():
        raise RenderCancelled("rendering the transcript was cancelled")


def _too_long(renderer: ClaudeCodeRenderer) -> list[str]:
    """Count a line too long to keep: the note that stands for it (after a waiting turn)."""
    renderer.feed("")
    return renderer.note(f"[line {renderer.line_number}: longer than {MAX_LINE_BYTES} bytes, skipped]")


def _render_whole(src: Path, out_fd: int, cancel: threading.Event | None = None) -> str | None:
    """Render all of ``src`` into ``out_fd``; return the last assistant text. A line of
    ``MAX_LINE_BYTES`` or more is skipped with a note, as in :func:`_update` (never rendered
    in pieces: a piece of an agent's tool input could read as a turn of its own)."""
    renderer = ClaudeCodeRenderer()
    long = False  # inside a line too long to keep
    with (
        os.fdopen(out_fd, "w", encoding="utf-8", errors="replace") as out,  # lone surrogates
        open_regular(src, "transcript") as handle,
    ):
        while raw := handle.readline(MAX_LINE_BYTES):
            _check(cancel)
            complete = raw.endswith(b"\n")
            if long or (not complete and len(raw) >= MAX_LINE_BYTES):
                long = not complete
                lines = [] if long else _too_long(renderer)
            else:
                lines = renderer.feed(raw.decode("utf-8", errors="replace"))
            for line in lines:
                out.write(line)
                out.write("\n")
        for line in [*(_too_long(renderer) if long else []), *renderer.flush()]:
            out.write(line + "\n")
    return renderer.last_assistant_text


@contextlib.contextmanager
def _temporary_render(src: Path, cancel: threading.Event | None = None) -> Iterator[tuple[Path, str | None]]:
    fd, name = tempfile.mkstemp(prefix="judge-claude-code-", suffix=".txt")
    path = Path(name)
    if isinstance(cancel, CancelFlag):
        cancel.files.append(path)
    try:
        try:
            last = _render_whole(src, fd, cancel)
        except OSError as exc:
            raise RenderError(f"cannot read transcript {src}: {exc}") from exc
        yield path, last
    finally:
        with contextlib.suppress(OSError):
            path.unlink()


class _Entry:
    """One transcript's cache files."""

    def __init__(self, cache_dir: Path, key: str) -> None:
        self.text = cache_dir / f"{key}.txt"
        self.meta = cache_dir / f"{key}.json"
        self.lock = cache_dir / f"{key}.lock"

    def load(self) -> dict[str, Any] | None:
        try:
            data = json.loads(self.meta.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) and data.get("format") == _FORMAT else None

    def save(self, meta: dict[str, Any]) -> None:
        tmp = self.meta.with_suffix(".json.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(meta, out)
        os.replace(tmp, self.meta)


def _usable(meta: dict[str, Any] | None, identity: list[Any], src_fd: int, size: int) -> bool:
    """True when ``meta`` describes a prefix of the transcript open on ``src_fd``."""
    if meta is None or meta.get("identity") != identity:
        return False
    offset = meta.get("offset")
    if not isinstance(offset, int) or not 0 <= offset <= size:
        return False
    start = max(0, offset - _TAIL_CHECK_BYTES)
    return _digest(os.pread(src_fd, offset - start, start)) == meta.get("tail_digest")


def _resume(
    meta: dict[str, Any] | None, identity: list[Any], src_fd: int, size: int, text_fd: int
) -> tuple[ClaudeCodeRenderer, int, int]:
    """(renderer, transcript offset, text size) to go on from; a fresh start when the cache
    does not describe a prefix of this transcript or its text is shorter than recorded."""
    if meta is not None and _usable(meta, identity, src_fd, size):
        try:
            resumed = ClaudeCodeRenderer.from_state(meta["renderer"])
            offset, text_size = int(meta["offset"]), int(meta["text_size"])
        except (KeyError, TypeError, ValueError):
            pass
        else:
            if os.fstat(text_fd).st_size >= text_size:
                return resumed, offset, text_size
    return ClaudeCodeRenderer(), 0, 0


def _update(
    entry: _Entry, src: Path, identity: list[Any], cancel: threading.Event | None = None
) -> tuple[str | None, bool]:
    """Bring ``entry`` up to date with ``src``; return (last assistant text, complete).

    ``complete`` is False when the transcript ends with a line that has no newline yet. A
    line of ``MAX_LINE_BYTES`` or more is skipped with a note (never held in memory).
    """
    with open_regular(src, "transcript") as handle:
        src_fd = handle.fileno()
        size = os.fstat(src_fd).st_size
        meta = entry.load()
        text_fd = os.open(entry.text, os.O_RDWR | os.O_CREAT, 0o600)
        with os.fdopen(text_fd, "r+b") as text:
            renderer, offset, text_size = _resume(meta, identity, src_fd, size, text_fd)
            text.truncate(text_size)  # drops what a crashed update left beyond the metadata
            text.seek(text_size)
            handle.seek(offset)
            pending = b""  # the start of the line being read
            too_long = 0  # bytes of it read so far, once it is too long to keep
            while chunk := handle.read(_READ_CHUNK):
                _check(cancel)
                *complete, tail = chunk.split(b"\n")
                rendered: list[str] = []
                for piece in complete:
                    offset += too_long + len(pending) + len(piece) + 1
                    if too_long or len(pending) + len(piece) >= MAX_LINE_BYTES:
                        rendered.extend(_too_long(renderer))
                    else:
                        rendered.extend(renderer.feed((pending + piece).decode("utf-8", errors="replace")))
                    pending, too_long = b"", 0
                if too_long or len(pending) + len(tail) >= MAX_LINE_BYTES:
                    too_long, pending = too_long + len(pending) + len(tail), b""
                else:
                    pending += tail
                if rendered:
                    text.write(("\n".join(rendered) + "\n").encode("utf-8", "replace"))
            text.flush()
            text_size = text.tell()
            # A turn nothing follows yet is shown as it is, but not kept: the cache stops
            # before it and keeps it waiting, so the next Stop can still label it.
            state = renderer.state()
            if last := renderer.flush():
                text.write(("\n".join(last) + "\n").encode("utf-8", "replace"))
                text.flush()
        start = max(0, offset - _TAIL_CHECK_BYTES)
        entry.save(
            {
                "format": _FORMAT,
                "identity": identity,
                "offset": offset,
                "tail_digest": _digest(os.pread(src_fd, offset - start, start)),
                "text_size": text_size,
                "renderer": state,
            }
        )
    return renderer.last_assistant_text, not pending and not too_long


def _prune(cache_dir: Path, keep: str) -> None:
    """Remove entries unused for MAX_AGE_SECONDS and the oldest beyond MAX_ENTRIES."""
    now = time.time()
    metas: list[tuple[float, Path]] = []
    with contextlib.suppress(OSError):
        for path in cache_dir.glob("*.json"):
            with contextlib.suppress(OSError):
                metas.append((path.stat().st_mtime, path))
    metas.sort(reverse=True)
    for index, (mtime, meta) in enumerate(metas):
        key = meta.stem
        if key == keep or (index < MAX_ENTRIES and now - mtime < MAX_AGE_SECONDS):
            continue
        for suffix in (".txt", ".json", ".lock"):
            with contextlib.suppress(OSError):
                (cache_dir / f"{key}{suffix}").unlink()


@contextlib.contextmanager
def rendered_transcript(
    jsonl: Path | None, cache_dir: Path | None = None, cancel: threading.Event | None = None
) -> Iterator[tuple[Path | None, str | None]]:
    """Yield (readable transcript path, last assistant text) for Claude Code's ``jsonl``.

    With ``cache_dir``, rendering resumes where the last call for the same transcript
    stopped (see the module docstring); without, the transcript is rendered into a private
    temporary file that is removed on exit. Yields ``(None, None)`` when there is no
    transcript; raises :class:`RenderError` when it cannot be read, and
    :class:`RenderCancelled` soon after ``cancel`` is set (what it wrote is removed).
    """
    if jsonl is None or not jsonl.is_file():
        yield None, None
        return
    if cache_dir is None:
        with _temporary_render(jsonl, cancel) as rendered:
            yield rendered
        return
    try:
        real = jsonl.resolve()
        st = real.stat()
        identity: list[Any] = [str(real), st.st_dev, st.st_ino]
        key = _digest(json.dumps(identity).encode())[:32]
        cache_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        entry = _Entry(cache_dir, key)
        lock_fd = os.open(entry.lock, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        # No usable cache folder: render without one.
        with _temporary_render(jsonl, cancel) as rendered:
            yield rendered
        return
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX)
        try:
            last, complete = _update(entry, real, identity, cancel)
        except OSError as exc:
            raise RenderError(f"cannot read transcript {jsonl}: {exc}") from exc
        fcntl.flock(lock_fd, fcntl.LOCK_UN)
        _prune(cache_dir, key)
    finally:
        os.close(lock_fd)
    if not complete:
        # The last line is still being written: render the whole file privately instead.
        with _temporary_render(jsonl, cancel) as rendered:
            yield rendered
        return
    yield entry.text, last


#: Longest wait, after a cancelled render, for it to stop (its files are removed anyway).
CANCEL_WAIT_SECONDS = 0.2


@contextlib.asynccontextmanager
async def rendering(
    jsonl: Path | None, cache_dir: Path | None = None
) -> AsyncIterator[tuple[Path | None, str | None]]:
    """:func:`rendered_transcript` in a daemon thread, so the event loop stays free: a
    deadline or a signal that cancels the hook call is served at once, the render stops at
    its next chunk, and a render still running when the process exits does not hold it."""
    cancel = CancelFlag()
    manager = rendered_transcript(jsonl, cache_dir, cancel)
    loop = asyncio.get_running_loop()
    future: asyncio.Future[tuple[Path | None, str | None]] = loop.create_future()
    finished = threading.Event()
    outcome: list[Any] = []

    def deliver() -> None:
        if future.done():
            return
        if isinstance(outcome[0], BaseException):
            future.set_exception(outcome[0])
        else:
            future.set_result(outcome[0])

    def enter() -> None:
        try:
            outcome.append(manager.__enter__())
        except BaseException as exc:  # handed to the awaiting task
            outcome.append(exc)
        finished.set()
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is waiting
            loop.call_soon_threadsafe(deliver)

    threading.Thread(target=enter, name="judge-render", daemon=True).start()
    try:
        value = await future
    except asyncio.CancelledError:
        cancel.set()
        finished.wait(CANCEL_WAIT_SECONDS)
        if outcome and not isinstance(outcome[0], BaseException):
            manager.__exit__(None, None, None)  # it finished after all: remove its files
        for path in cancel.files:  # a render still busy (one long line) may never get to it
            with contextlib.suppress(OSError):
                path.unlink()
        raise
    try:
        yield value
    finally:
        manager.__exit__(None, None, None)
