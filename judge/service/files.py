"""Transcript files of the HTTP service: ``execution_summary`` paths confined to
``--transcripts-dir``, and private copies of inline transcripts."""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
import time
from pathlib import Path
from typing import Any

from judge.errors import ApiError
from judge.transcripts import PRIVATE_PREFIX, discard_rendered


def confine_path(raw: Any, root: Path | None) -> str:
    """The resolved ``execution_summary`` path, which must be a file inside ``root``.

    The hooks get a snapshot of it (:func:`snapshot_confined`), never this path itself.
    """
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


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def open_confined(resolved: Path, root: Path) -> int:
    """Open ``resolved`` (a path :func:`confine_path` checked) for reading, one component at
    a time from a descriptor of ``root``, following no symlink.

    A folder swapped for a symlink after the check makes this fail (``ELOOP``/``ENOTDIR``)
    instead of reading outside ``root``. Only a regular file is accepted (a FIFO or a device
    is refused before any read; ``O_NONBLOCK`` keeps a FIFO from blocking the open).
    """
    parts = resolved.relative_to(root).parts
    if not parts:
        raise ApiError(400, "execution_summary: no such transcript file in the transcripts dir")
    fd = os.open(root, _DIR_FLAGS)
    try:
        for name in parts[:-1]:
            step = os.open(name, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = step
        file_fd = os.open(parts[-1], _FILE_FLAGS, dir_fd=fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise ApiError(400, "execution_summary: the path changed to go through a symlink") from None
        raise ApiError(400, f"execution_summary: cannot open: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if not stat.S_ISREG(os.fstat(file_fd).st_mode):
        os.close(file_fd)
        raise ApiError(400, "execution_summary: not a regular file")
    return file_fd


#: Largest transcript file the service copies for one request (``--max-transcript-bytes``).
DEFAULT_MAX_TRANSCRIPT_BYTES = 256 << 20
_CHUNK = 1 << 20


class SnapshotTooSlow(Exception):
    """The transcript could not be copied before the hooks' deadline."""


def snapshot_confined(
    resolved: Path,
    root: Path,
    folder: Path,
    *,
    max_bytes: int = DEFAULT_MAX_TRANSCRIPT_BYTES,
    deadline: float | None = None,
) -> Path:
    """A private copy (same name, in ``folder``) of the transcript at ``resolved``, read
    through :func:`open_confined`: the hooks read this copy, which nothing outside the
    service can redirect while the request runs.

    Bounded: a file over ``max_bytes`` is refused (413) before anything is copied; the
    copy reads the file's data only (holes stay holes, so a sparse file costs what it
    holds, not what it claims), as it was when opened (what is appended meanwhile is
    left out), and stops at ``deadline`` (:func:`time.monotonic`) with
    :class:`SnapshotTooSlow`.
    """
    source_fd = open_confined(resolved, root)
    target = folder / resolved.name
    try:
        size = os.fstat(source_fd).st_size
        if size > max_bytes:
            raise ApiError(
                413,
                f"execution_summary: the transcript is {size} bytes, over this service's limit of "
                f"{max_bytes} (--max-transcript-bytes)",
            )
        os.set_blocking(source_fd, True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            _copy_data(source_fd, fd, size, deadline)
        finally:
            os.close(fd)
    except OSError as exc:
        raise ApiError(400, f"execution_summary: cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(source_fd)
    return target


def _copy_data(source: int, target: int, size: int, deadline: float | None) -> None:
    """The first ``size`` bytes of ``source`` into ``target``, holes left as holes."""
    position = 0
    while position < size:
        try:
            start = os.lseek(source, position, os.SEEK_DATA)
            end = min(os.lseek(source, start, os.SEEK_HOLE), size)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # no data after position: the rest is a hole
                break
            if exc.errno != errno.EINVAL:  # EINVAL: no SEEK_DATA here; copy it all
                raise
            start, end = position, size
        while start < end:
            if deadline is not None and time.monotonic() > deadline:
                raise SnapshotTooSlow(f"the {size}-byte transcript was not copied within the hooks' timeout")
            chunk = os.pread(source, min(_CHUNK, end - start), start)
            if not chunk:  # cut short meanwhile
                os.ftruncate(target, start)
                return
            os.pwrite(target, chunk, start)
            start += len(chunk)
        position = end
    os.ftruncate(target, size)


#: Private folders older than this are left over from a service that was killed mid-request.
STALE_SECONDS = 24 * 3600


def sweep_private_folders(max_age: float = STALE_SECONDS) -> int:
    """Remove this user's :func:`private_folder` leftovers older than ``max_age`` seconds
    (a request never lasts that long, so none is in use); how many were removed."""
    cutoff = time.time() - max_age
    removed = 0
    for folder in Path(tempfile.gettempdir()).glob(PRIVATE_PREFIX + "*"):
        try:
            info = folder.lstat()
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mtime >= cutoff:
                continue
            remove_folder(folder)
            removed += 1
        except OSError:
            continue
    return removed


def private_folder() -> Path:
    """A new 0700 folder for one inline transcript and the judge's rendered copy of it."""
    return Path(tempfile.mkdtemp(prefix=PRIVATE_PREFIX))


def write_private(text: str, folder: Path | None = None) -> Path:
    """Write an inline transcript to a 0600 file in ``folder`` (default: a new private folder)."""
    folder = folder if folder is not None else private_folder()
    path = folder / "transcript.txt"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


def remove_private(path: Path) -> None:
    """Delete an inline transcript and every rendered copy the judge made of it.

    Synchronous and quick (a few unlinks), so a request can call it in ``finally`` even
    while it is being cancelled. A render still running in a thread can only write into
    the private folder (:data:`~judge.transcripts.prepared.PRIVATE_PREFIX`), so once the folder is
    gone, no copy can appear later.
    """
    if not path.parent.name.startswith(PRIVATE_PREFIX):
        discard_rendered(path)
        path.unlink(missing_ok=True)
        return
    remove_folder(path.parent)


def remove_folder(folder: Path) -> None:
    """Remove a :func:`private_folder` and everything in it (quick; never awaits)."""
    for _ in range(100):  # a late render may add a file while the folder is being removed
        try:
            shutil.rmtree(folder)
        except FileNotFoundError:
            pass
        except OSError as exc:
            if exc.errno != errno.ENOTEMPTY:
                raise
            continue
        if not folder.exists():
            return
