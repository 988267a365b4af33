"""Opening files named from outside (configs, suites, cases, contexts, transcripts) safely.

A path can name a FIFO (opening it blocks until a writer comes, reading it waits
forever), ``/dev/zero`` or ``/dev/urandom`` (endless data), a terminal or a socket, or a
special file that ``stat`` calls regular but whose reads wait for events (``/proc/kmsg``
as root, a tracing pipe). Every file judge reads on someone's say-so goes through
:func:`open_regular`: it opens with ``O_NONBLOCK`` (so a FIFO cannot block the open),
checks with ``fstat`` on the descriptor it got (no race with a rename) that it is a
regular file, and reads with ``O_NONBLOCK`` still set: a read of a real regular file
never waits, so a read that would (``EAGAIN``) means a special file, refused there and
then instead of waiting for it. Documents loaded whole are read with a byte limit.
Anything else is a :class:`NotARegularFile` error, an ``OSError`` with a readable
message.

Such documents are often JSON: :func:`load_json` parses them, raising JSON nested past
the parser's recursion limit as :class:`NestedTooDeeply` (a ``ValueError``).
"""

from __future__ import annotations

import errno
import io
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

#: Largest config, suite, context or other document loaded whole (transcripts are
#: streamed, never loaded whole, and have no such limit).
MAX_DOCUMENT_BYTES = 64 << 20


def file_kind(mode: int) -> str:
    """What a file that is not a regular one is, for messages."""
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


class RefusedFile(OSError):
    """A file judge will not read; ``str()`` is the whole message (naming the file)."""

    def __init__(self, code: int, path: str | Path, message: str) -> None:
        super().__init__(code, message, str(path))
        self.message = message

    def __str__(self) -> str:
        return self.message


class NotARegularFile(RefusedFile):
    """The path names something other than a regular file (FIFO, device, socket...)."""

    def __init__(self, path: str | Path, what: str, kind: str) -> None:
        super().__init__(errno.EINVAL, path, f"{what} {path} is {kind}, not a regular file")


class FileTooLarge(RefusedFile):
    """A document over its byte limit."""

    def __init__(self, path: str | Path, what: str, limit: int) -> None:
        super().__init__(errno.EFBIG, path, f"{what} {path} is larger than {limit} bytes")


class NestedTooDeeply(ValueError):
    """JSON nested deeper than the parser can follow (``json.loads`` hit the recursion limit)."""

    def __init__(self) -> None:
        super().__init__("JSON is nested too deeply")


def load_json(text: str | bytes) -> Any:
    """``json.loads(text)``, with input nested too deeply raised as :class:`NestedTooDeeply`
    (a ``ValueError``) instead of a ``RecursionError``."""
    try:
        return json.loads(text)
    except RecursionError:
        raise NestedTooDeeply() from None


class _NeverWaiting(io.FileIO):
    """A regular file read with ``O_NONBLOCK`` set: a read that would wait raises
    :class:`NotARegularFile` (``FileIO`` would return ``None``, or part of the data)."""

    def __init__(self, fd: int, path: str | Path, what: str) -> None:
        super().__init__(fd, "rb", closefd=True)
        self._path, self._what = path, what

    def _blocks(self) -> NotARegularFile:
        return NotARegularFile(self._path, self._what, "a special file whose reads wait for data")

    def readinto(self, buffer: Any) -> int:
        count = super().readinto(buffer)
        if count is None:
            raise self._blocks()
        return count

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            return self.readall()
        data = super().read(size)
        if data is None:
            raise self._blocks()
        return data

    def readall(self) -> bytes:
        chunks = []
        while chunk := self.read(1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)


def open_regular(path: str | Path, what: str = "file") -> io.BufferedReader:
    """``path`` opened for binary reading if it is a regular file, else :class:`NotARegularFile`
    (``IsADirectoryError`` for a directory).

    Never blocks on a FIFO; follows symlinks (the file they lead to is checked). A read
    that would wait (a special file ``stat`` calls regular) raises :class:`NotARegularFile`.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            raise NotARegularFile(path, what, file_kind(mode))
        raw = _NeverWaiting(fd, path, what)
    except BaseException:
        os.close(fd)
        raise
    return io.BufferedReader(raw)


def check_readable(path: str | Path, what: str = "file") -> None:
    """Open ``path`` as :func:`open_regular` does and read its first byte: a special file
    ``stat`` calls regular is refused here, where the caller can say so, rather than at
    the first read of the work that needs it."""
    with open_regular(path, what) as handle:
        handle.read(1)


def read_bytes(path: str | Path, what: str = "file", limit: int = MAX_DOCUMENT_BYTES) -> bytes:
    """The whole content of a regular file of at most ``limit`` bytes."""
    with open_regular(path, what) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise FileTooLarge(path, what, limit)
    return data


def read_text(path: str | Path, what: str = "file", limit: int = MAX_DOCUMENT_BYTES) -> str:
    """:func:`read_bytes` decoded as UTF-8 (``UnicodeDecodeError`` when it is not)."""
    return read_bytes(path, what, limit).decode("utf-8")


def text_lines(handle: BinaryIO, max_line_bytes: int) -> Iterator[str]:
    """Lines of a binary file decoded as UTF-8 (bad bytes replaced), ending in ``\\n``
    (a ``\\r\\n`` ending is read as ``\\n``).

    A line longer than ``max_line_bytes`` comes in pieces of that size (only the last
    ends with ``\\n``), so memory stays bounded whatever the file holds.
    """
    while line := handle.readline(max_line_bytes):
        if line.endswith(b"\r\n"):
            line = line[:-2] + b"\n"
        yield line.decode("utf-8", "replace")


def storable_text(text: str) -> str:
    """``text`` as a database or a UTF-8 file takes it: a lone surrogate (text given as
    bytes that are not UTF-8, e.g. a session id on a command line) becomes its escape,
    the same one every time."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "backslashreplace")
    return text
