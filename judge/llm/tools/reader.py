"""Reading one transcript file in bounded pieces: blocks of whole lines, a line index.

Every loop here reads at most one block at a time and checks the call's
:class:`~judge.llm.tools.deadline.ToolDeadline` between blocks, so a huge file, or a huge
single line, costs bounded memory and stops with its hook.
"""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from io import BufferedReader
from pathlib import Path
from typing import IO, NamedTuple

from judge.files import open_regular
from judge.llm.tools.deadline import ToolDeadline

#: Bytes read at a time. A block is searched whole, so lines up to a few blocks long are
#: seen in one piece; longer lines are searched in overlapping pieces (same line number).
BLOCK_BYTES = 1 << 18
#: Line-offset marks are kept at the first and last line start of about every this many
#: bytes, so reaching any line skips at most this much after a seek.
MARK_BYTES = 1 << 18
#: Line indexes kept in memory (one per transcript file version, a few kB per 100 MB).
MAX_CACHED_INDEXES = 32
MAX_LINE_CHARS = 2000
#: Bytes of one long line read to count its characters; past this it is "over N chars".
MAX_LINE_SCAN_BYTES = 8 << 20

#: UTF-8 continuation bytes: deleting them leaves one byte per character.
_CONTINUATION = bytes(range(0x80, 0xC0))
#: Bytes of a line read for display (enough for MAX_LINE_CHARS characters of any width).
_HEAD_BYTES = MAX_LINE_CHARS * 4 + 4


def chars(data: bytes) -> int:
    """Number of characters in UTF-8 ``data`` (exact even when it is cut mid-character)."""
    return len(data.translate(None, _CONTINUATION))


# ---------------------------------------------------------------------------
# Blocks of whole lines


class Chunk(NamedTuple):
    #: a reused buffer: valid only until the next chunk is read
    data: bytearray
    #: ``data[:end]`` is the chunk
    end: int
    #: the chunk begins at the start of a line (false for a later piece of a very long line)
    starts: bool
    #: the last line of the chunk goes on in the next one (a piece of a very long line)
    continues: bool


def _char_boundary(data: bytearray, index: int, end: int) -> int:
    """``index`` moved back to the start of a UTF-8 character (``data[:end]`` is valid)."""
    while 0 < index < end and data[index] & 0xC0 == 0x80:
        index -= 1
    return index


def chunks(handle: BufferedReader, block: int, overlap: int, budget: ToolDeadline) -> Iterator[Chunk]:
    """The file as chunks of whole lines, about ``block`` bytes each, in one reused buffer.

    A line longer than four blocks comes in pieces of at least four blocks; each piece
    repeats the last ``overlap`` bytes of the one before, so a match up to that long is
    never cut in two. Only the first piece of a line has ``starts``.
    """
    piece = 4 * block
    overlap = max(0, min(overlap, piece // 2))
    buffer = bytearray(piece + block)
    view = memoryview(buffer)
    kept, starts = 0, True  # bytes of an unfinished line at the front of the buffer
    while True:
        budget.check()
        filled = kept + (handle.readinto(view[kept : kept + block]) or 0)
        if filled == kept:
            if kept:
                yield Chunk(buffer, kept, starts, False)
            return
        cut = buffer.rfind(b"\n", kept, filled) + 1
        if cut:
            yield Chunk(buffer, cut, starts, False)
            starts = True
        elif filled >= piece:
            yield Chunk(buffer, filled, starts, True)
            cut, starts = _char_boundary(buffer, filled - overlap, filled), False
        else:
            kept = filled
            continue
        kept = filled - cut
        buffer[:kept] = bytes(view[cut:filled])  # a copy: the two ranges may overlap


# ---------------------------------------------------------------------------
# Line index


@dataclass(frozen=True)
class LineIndex:
    """Line count and sparse line-start offsets of one version of a file."""

    size: int
    mtime_ns: int
    lines: int
    #: ascending line numbers and the byte offsets where those lines start
    mark_lines: list[int]
    mark_offsets: list[int]


_INDEXES: OrderedDict[str, LineIndex] = OrderedDict()
_INDEX_LOCK = threading.Lock()


def _build_index(path: Path, block: int, budget: ToolDeadline) -> LineIndex:
    """Count the lines and mark line starts in every MARK_BYTES step (one streaming pass)."""
    info = path.stat()
    step = max(1, min(MARK_BYTES, block))
    newlines, offset, last = 0, 0, b"\n"
    mark_lines, mark_offsets = [1], [0]
    with open_regular(path, "transcript") as handle:
        while True:
            budget.check()
            data = handle.read(block)
            if not data:
                break
            for begin in range(0, len(data), step):
                stop = min(begin + step, len(data))
                found = data.count(b"\n", begin, stop)
                if not found:
                    continue
                first = data.find(b"\n", begin, stop)
                if found > 1:  # the line after a long one starts at its step's first newline
                    mark_lines.append(newlines + 2)
                    mark_offsets.append(offset + first + 1)
                newlines += found
                mark_lines.append(newlines + 1)
                mark_offsets.append(offset + data.rfind(b"\n", begin, stop) + 1)
            offset += len(data)
            last = data[-1:]
    lines = newlines + (0 if last == b"\n" else 1)
    return LineIndex(info.st_size, info.st_mtime_ns, lines, mark_lines, mark_offsets)


def line_index(path: Path, block: int = BLOCK_BYTES, budget: ToolDeadline | None = None) -> LineIndex:
    """The line index of ``path``, built once per file version (path, size, mtime)."""
    key = str(path.resolve())
    info = path.stat()
    with _INDEX_LOCK:
        index = _INDEXES.get(key)
        if index is not None and (index.size, index.mtime_ns) == (info.st_size, info.st_mtime_ns):
            _INDEXES.move_to_end(key)
            return index
    index = _build_index(path, block, budget or ToolDeadline())
    with _INDEX_LOCK:
        _INDEXES[key] = index
        _INDEXES.move_to_end(key)
        while len(_INDEXES) > MAX_CACHED_INDEXES:
            _INDEXES.popitem(last=False)
    return index


def seek_line(handle: IO[bytes], index: LineIndex, number: int, block: int, budget: ToolDeadline) -> None:
    """Position ``handle`` at the start of line ``number`` (at most one mark step's skip)."""
    at = bisect.bisect_right(index.mark_lines, number) - 1
    skip, offset = number - index.mark_lines[at], index.mark_offsets[at]
    handle.seek(offset)
    while skip:
        budget.check()
        data = handle.read(block)
        if not data:
            return
        found = data.count(b"\n")
        if found < skip:
            skip -= found
            offset += len(data)
            continue
        pos = -1
        for _ in range(skip):
            pos = data.find(b"\n", pos + 1)
        handle.seek(offset + pos + 1)
        return


class Line(NamedTuple):
    #: the start of the line (up to MAX_LINE_CHARS characters and a bit)
    head: str
    #: its length in characters (a lower bound when not ``whole``)
    length: int
    #: false when the line was longer than MAX_LINE_SCAN_BYTES: the handle is then
    #: somewhere inside it, and the caller seeks to the next line through the index
    counted: bool


def read_line(handle: IO[bytes], block: int, budget: ToolDeadline) -> Line | None:
    """The next line (its start and length); None at the end of file."""
    head = handle.readline(_HEAD_BYTES)
    if not head:
        return None
    if head.endswith(b"\n") or len(head) < _HEAD_BYTES:  # the whole line
        line = head[:-2] if head.endswith(b"\r\n") else head.removesuffix(b"\n")
        text = line.decode("utf-8", "replace")
        return Line(text, len(text), True)
    total, last, scanned = chars(head), head[-2:], len(head)
    while True:  # skip the rest of a long line, counting it, up to MAX_LINE_SCAN_BYTES
        if scanned >= MAX_LINE_SCAN_BYTES:
            return Line(head.decode("utf-8", "replace"), total, False)
        budget.check()
        rest = handle.readline(min(block, MAX_LINE_SCAN_BYTES - scanned))
        if not rest:
            break
        scanned += len(rest)
        total += chars(rest)
        last = (last + rest[-2:])[-2:]
        if rest.endswith(b"\n"):
            break
    if last.endswith(b"\n"):
        total -= 2 if last == b"\r\n" else 1
    return Line(head.decode("utf-8", "replace"), total, True)
