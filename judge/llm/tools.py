"""ReadFile and GrepSearch over ONE transcript file (SPEC §5).

The signatures are the reference platform's, so prompts written for it work unchanged.
The model may pass any ``filePath``; the tools only ever read the transcript they are
bound to. Lines are numbered from 1 (a line ends at ``\\n``; a trailing ``\\r`` is not
shown) and outputs are capped.

Both tools work on large binary blocks, so a 1 GB transcript is searched in bounded
memory at close to GNU grep's speed: GrepSearch runs one compiled, case-insensitive
pattern over each block of whole lines (a plain ASCII query on the raw bytes, anything
else on the decoded text) and counts newlines only up to each hit. Regular expressions
run on the ``regex`` engine with one time budget for the whole call, so a catastrophic
pattern returns promptly. ReadFile seeks through a sparse line-offset index built once
per file version (one streaming pass, kept in memory), so reading near the end of a
huge file does not re-read it.

The docstrings of :meth:`TranscriptTools.ReadFile` and :meth:`TranscriptTools.GrepSearch`
are the tool descriptions the model sees.
"""

from __future__ import annotations

import bisect
import inspect
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from io import BufferedReader
from pathlib import Path
from typing import IO, Any, NamedTuple, TypeVar

import regex

from judge.llm.providers.base import ToolSpec

#: Bytes read at a time. A block is searched whole, so lines up to a few blocks long are
#: seen in one piece; longer lines are searched in overlapping pieces (same line number).
BLOCK_BYTES = 1 << 18
#: A line-offset mark is kept about every this many bytes (ReadFile seeks to the mark
#: before the window and skips at most this much).
MARK_BYTES = 1 << 18
#: Line indexes kept in memory (one per transcript file version, a few kB per 100 MB).
MAX_CACHED_INDEXES = 32
DEFAULT_WINDOW = 100
MAX_WINDOW = 400
MAX_LINE_CHARS = 2000
MAX_MATCH_LINE_CHARS = 400
MAX_OUTPUT_CHARS = 24_000
MAX_RESULTS_CAP = 200
GREP_SECONDS = 2.0
#: Longest GrepSearch query: the regex engine's per-search set-up grows with the cube of
#: a long literal's length and does not honour its time limit, so longer ones are refused.
MAX_QUERY_CHARS = 500

#: UTF-8 continuation bytes: deleting them leaves one byte per character.
_CONTINUATION = bytes(range(0x80, 0xC0))
#: What a block is searched as: raw bytes (plain ASCII query) or decoded text.
_Text = TypeVar("_Text", str, bytearray)
#: Bytes of a line read for display (enough for MAX_LINE_CHARS characters of any width).
_HEAD_BYTES = MAX_LINE_CHARS * 4 + 4


def _chars(data: bytes) -> int:
    """Number of characters in UTF-8 ``data`` (exact even when it is cut mid-character)."""
    return len(data.translate(None, _CONTINUATION))


def _clip(text: str, limit: int, total: int | None = None) -> str:
    total = len(text) if total is None else total
    if total <= limit:
        return text
    return f"{text[:limit]}… [line truncated: {total} chars]"


# ---------------------------------------------------------------------------
# Blocks of whole lines


class _Chunk(NamedTuple):
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


def _chunks(handle: BufferedReader, block: int, overlap: int) -> Iterator[_Chunk]:
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
        filled = kept + (handle.readinto(view[kept : kept + block]) or 0)
        if filled == kept:
            if kept:
                yield _Chunk(buffer, kept, starts, False)
            return
        cut = buffer.rfind(b"\n", kept, filled) + 1
        if cut:
            yield _Chunk(buffer, cut, starts, False)
            starts = True
        elif filled >= piece:
            yield _Chunk(buffer, filled, starts, True)
            cut, starts = _char_boundary(buffer, filled - overlap, filled), False
        else:
            kept = filled
            continue
        kept = filled - cut
        buffer[:kept] = bytes(view[cut:filled])  # a copy: the two ranges may overlap


def _decode(data: bytearray, end: int) -> str:
    text = str(memoryview(data)[:end], "utf-8", "replace")
    return text.replace("\r\n", "\n") if "\r" in text else text


def _budget(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    return left


@dataclass
class _Cursor:
    #: number of the line the current chunk begins in
    number: int = 1
    #: last line number a match was found on
    reached: int = 0


def _chunk_hits(
    pattern: Any, data: _Text, size: int, newline: _Text, chunk: _Chunk, cursor: _Cursor, deadline: float
) -> Iterator[tuple[int, str]]:
    """(line number, text to show) per matching line of one chunk; moves ``cursor`` past it.

    One result per line. A match that runs over a newline does not count: that line
    alone is searched again, as grep would. Raises ``TimeoutError`` at the deadline.
    """
    number, counted, pos = cursor.number, 0, 0
    while pos <= size:
        found = pattern.search(data, pos, size, timeout=_budget(deadline))
        if found is None:
            break
        hit = found.start()
        if hit == size and (size == 0 or data.endswith(newline, 0, size)):
            break  # an empty match after the last newline is not a line
        start = data.rfind(newline, 0, hit) + 1
        end = data.find(newline, hit)
        end = size if end < 0 else end
        pos = end + 1
        if found.end() > end:
            found = pattern.search(data, start, end, timeout=_budget(deadline))
            if found is None:
                continue
            hit = found.start()
        number += data.count(newline, counted, start)
        counted = start
        cursor.reached = number
        head_cut = start == 0 and not chunk.starts
        tail_cut = end == size and chunk.continues
        yield number, _excerpt(data, start, end, hit, head_cut, tail_cut)
    cursor.number = number + data.count(newline, counted, size)


def _excerpt(data: _Text, start: int, end: int, hit: int, head_cut: bool, tail_cut: bool) -> str:
    """The matching line for the report: whole when short, else clipped around the match."""
    line, before = data[start:end], data[start:hit]
    if isinstance(line, bytearray) and isinstance(before, bytearray):
        text, offset = line.decode("utf-8", "replace"), len(before.decode("utf-8", "replace"))
    else:
        text, offset = str(line), len(before)
    if not tail_cut and text.endswith("\r"):
        text = text[:-1]
    limit = MAX_MATCH_LINE_CHARS
    if len(text) <= limit and not (head_cut or tail_cut):
        return text
    begin = 0 if offset < limit - 100 else offset - 100
    lead = "…" if begin or head_cut else ""
    size = f"over {len(text)}" if head_cut or tail_cut else str(len(text))
    return f"{lead}{text[begin : begin + limit]}… [line truncated: {size} chars]"


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


def _build_index(path: Path, block: int) -> LineIndex:
    """Count the lines and mark a line start about every MARK_BYTES (one streaming pass)."""
    info = path.stat()
    step = max(1, min(MARK_BYTES, block))
    newlines, offset, last = 0, 0, b"\n"
    mark_lines, mark_offsets = [1], [0]
    with path.open("rb") as handle:
        while data := handle.read(block):
            for begin in range(0, len(data), step):
                stop = min(begin + step, len(data))
                found = data.count(b"\n", begin, stop)
                if found:
                    newlines += found
                    mark_lines.append(newlines + 1)
                    mark_offsets.append(offset + data.rfind(b"\n", begin, stop) + 1)
            offset += len(data)
            last = data[-1:]
    lines = newlines + (0 if last == b"\n" else 1)
    return LineIndex(info.st_size, info.st_mtime_ns, lines, mark_lines, mark_offsets)


def line_index(path: Path, block: int = BLOCK_BYTES) -> LineIndex:
    """The line index of ``path``, built once per file version (path, size, mtime)."""
    key = str(path.resolve())
    info = path.stat()
    with _INDEX_LOCK:
        index = _INDEXES.get(key)
        if index is not None and (index.size, index.mtime_ns) == (info.st_size, info.st_mtime_ns):
            _INDEXES.move_to_end(key)
            return index
    index = _build_index(path, block)
    with _INDEX_LOCK:
        _INDEXES[key] = index
        _INDEXES.move_to_end(key)
        while len(_INDEXES) > MAX_CACHED_INDEXES:
            _INDEXES.popitem(last=False)
    return index


def _seek_line(handle: IO[bytes], index: LineIndex, number: int, block: int) -> None:
    """Position ``handle`` at the start of line ``number`` (at most one mark's skip)."""
    at = bisect.bisect_right(index.mark_lines, number) - 1
    skip, offset = number - index.mark_lines[at], index.mark_offsets[at]
    handle.seek(offset)
    while skip:
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


def _read_line(handle: IO[bytes], block: int) -> tuple[str, int] | None:
    """(the start of the next line, its length in characters); None at the end of file."""
    head = handle.readline(_HEAD_BYTES)
    if not head:
        return None
    if head.endswith(b"\n") or len(head) < _HEAD_BYTES:  # the whole line
        line = head[:-2] if head.endswith(b"\r\n") else head.removesuffix(b"\n")
        text = line.decode("utf-8", "replace")
        return text, len(text)
    total, last = _chars(head), head[-2:]
    while rest := handle.readline(block):  # skip the rest of a long line, counting it
        total += _chars(rest)
        last = (last + rest[-2:])[-2:]
        if rest.endswith(b"\n"):
            break
    if last.endswith(b"\n"):
        total -= 2 if last == b"\r\n" else 1
    return head.decode("utf-8", "replace"), total


# ---------------------------------------------------------------------------
# The tools


class TranscriptTools:
    """The judge's tools, bound to one transcript file."""

    def __init__(
        self, transcript: Path, *, grep_seconds: float = GREP_SECONDS, block_bytes: int = BLOCK_BYTES
    ) -> None:
        self.path = transcript
        self.grep_seconds = grep_seconds
        self.block_bytes = max(16, int(block_bytes))

    def line_count(self) -> int:
        """Number of lines (one streaming pass per file version; see :func:`line_index`)."""
        return line_index(self.path, self.block_bytes).lines

    def _note(self, file_path: Any) -> str:
        asked = str(file_path or "").strip()
        if not asked or asked == str(self.path) or Path(asked).name == self.path.name:
            return ""
        return (
            f"(Note: only the transcript can be read; {asked!r} is not available, "
            "so the transcript is shown.)\n"
        )

    def ReadFile(self, filePath: str, startLine: int, endLine: int) -> str:
        """Read lines of the conversation transcript (the file named by execution_summary).

        Returns the lines startLine..endLine (1-based, inclusive), each prefixed with its
        line number. At most 400 lines per call; very long lines are truncated. Start with
        the first ~100 lines, then read further windows or use GrepSearch to find places.

        Args:
            filePath: Path of the transcript file (the execution_summary value).
            startLine: First line to read, 1-based.
            endLine: Last line to read, inclusive.
        """
        note = self._note(filePath)
        try:
            start = max(1, int(startLine))
            end = int(endLine)
        except (TypeError, ValueError):
            return note + "Error: startLine and endLine must be integers."
        if end < start:
            return note + f"Error: endLine ({end}) is before startLine ({start})."
        index = line_index(self.path, self.block_bytes)
        total = index.lines
        if start > total:
            return note + f"The transcript has only {total} lines; startLine {start} is past the end."
        end = min(end, total, start + MAX_WINDOW - 1)
        out: list[str] = []
        size = 0
        shown_end = start - 1
        with self.path.open("rb") as handle:
            _seek_line(handle, index, start, self.block_bytes)
            for number in range(start, end + 1):
                read = _read_line(handle, self.block_bytes)
                if read is None:  # the file shrank since it was indexed
                    break
                line = f"{number:>6}\t{_clip(read[0], MAX_LINE_CHARS, read[1])}"
                if size + len(line) > MAX_OUTPUT_CHARS and out:
                    break
                out.append(line)
                size += len(line) + 1
                shown_end = number
        header = f"{note}Transcript lines {start}-{shown_end} of {total}:"
        footer = ""
        if shown_end < total:
            footer = f"\n[{total - shown_end} more lines; continue from line {shown_end + 1}]"
        return "\n".join([header, *out]) + footer

    def GrepSearch(self, query: str, isRegexp: bool, maxResults: int = 20) -> str:
        """Search the conversation transcript for lines matching a query (case-insensitive).

        Returns matching lines with their line numbers, at most maxResults of them (up to
        200). Use it to find where something happened, then ReadFile around those lines.

        Args:
            query: Text to find, or a regular expression when isRegexp is true.
            isRegexp: Treat query as a regular expression.
            maxResults: Maximum number of matching lines to return (default 20).
        """
        if not isinstance(query, str) or not query:
            return "Error: query must be a non-empty string."
        if len(query) > MAX_QUERY_CHARS:
            return f"Error: query is {len(query)} characters long; at most {MAX_QUERY_CHARS} are allowed."
        try:
            limit = max(1, min(int(maxResults), MAX_RESULTS_CAP))
        except (TypeError, ValueError):
            limit = 20
        decode = True
        if isRegexp:
            try:
                pattern = regex.compile(query, regex.IGNORECASE | regex.MULTILINE | regex.VERSION0)
            except (regex.error, re.error, ValueError, OverflowError) as exc:
                return f"Error: invalid regular expression {query!r}: {exc}"
            except RecursionError:
                return f"Error: invalid regular expression {query!r}: nested too deeply"
        elif "\n" in query:
            return f"No lines match {query!r}."
        elif query.isascii():  # the fast path: search the raw bytes
            pattern = regex.compile(regex.escape(query.encode("ascii")), regex.IGNORECASE)
            decode = False
        else:  # full case folding, as str.casefold
            pattern = regex.compile(regex.escape(query), regex.IGNORECASE | regex.FULLCASE | regex.VERSION0)
        overlap = 4096 + 4 * len(query.encode("utf-8", "replace"))
        return self._search(query, pattern, decode, limit, overlap, literal=not isRegexp)

    def _search(self, query: str, pattern: Any, decode: bool, limit: int, overlap: int, literal: bool) -> str:
        deadline = time.monotonic() + self.grep_seconds
        hits: list[str] = []
        size = 0
        more = False
        last = 0
        cursor = _Cursor()
        began = time.monotonic()
        try:
            with self.path.open("rb") as handle:
                for chunk in _chunks(handle, self.block_bytes, overlap):
                    began = time.monotonic()
                    if decode:
                        text = _decode(chunk.data, chunk.end)
                        found = _chunk_hits(pattern, text, len(text), "\n", chunk, cursor, deadline)
                    else:
                        found = _chunk_hits(
                            pattern, chunk.data, chunk.end, bytearray(b"\n"), chunk, cursor, deadline
                        )
                    for number, text in found:
                        if number == last:
                            continue  # a later piece of a line already reported
                        line = f"{number}: {text}"
                        if len(hits) >= limit or size + len(line) > MAX_OUTPUT_CHARS:
                            more = True
                            break
                        hits.append(line)
                        size += len(line) + 1
                        last = number
                    if more:
                        break
        except TimeoutError:
            # One block takes milliseconds for a sane pattern: if a single block used up
            # half of the time, the pattern itself is the problem.
            if literal or time.monotonic() - began < self.grep_seconds / 2:
                return self._grep_report(query, hits, more, stopped_at=max(cursor.number, cursor.reached))
            return (
                f"Error: the regular expression {query!r} took too long (over "
                f"{self.grep_seconds:g} s; catastrophic backtracking?). Use a simpler pattern "
                "or a plain-text query."
            ) + (("\nMatches found before stopping:\n" + "\n".join(hits)) if hits else "")
        return self._grep_report(query, hits, more)

    def _grep_report(self, query: str, hits: list[str], more: bool, stopped_at: int | None = None) -> str:
        if stopped_at is not None:
            head = (
                f"Search for {query!r} stopped at line {stopped_at}: time limit of "
                f"{self.grep_seconds:g} s reached. {len(hits)} matching lines before that:"
            )
        elif not hits:
            return f"No lines match {query!r}."
        else:
            head = f"{len(hits)} matching lines for {query!r}" + (
                " (more exist; narrow the query or raise maxResults):" if more else ":"
            )
        return "\n".join([head, *hits])

    def specs(self) -> list[ToolSpec]:
        """The tool definitions offered to the model."""
        return [tool_spec(self.ReadFile), tool_spec(self.GrepSearch)]

    def call(self, name: str, arguments: dict[str, Any] | None) -> str:
        """Run a tool by name; bad calls come back as an error text, never an exception."""
        if arguments is None:
            return f"Error: the arguments for {name} were not a JSON object."
        try:
            if name == "ReadFile":
                start = arguments.get("startLine", 1)
                end = arguments.get("endLine", None)
                if end is None:
                    end = int(start) + DEFAULT_WINDOW - 1
                return self.ReadFile(str(arguments.get("filePath", "")), start, end)
            if name == "GrepSearch":
                return self.GrepSearch(
                    arguments.get("query", ""),
                    bool(arguments.get("isRegexp", False)),
                    arguments.get("maxResults", 20),
                )
        except (TypeError, ValueError) as exc:
            return f"Error: bad arguments for {name}: {exc}"
        except OSError as exc:
            return f"Error: the transcript cannot be read: {exc.strerror or exc}"
        return f"Error: unknown tool {name!r}; the tools are ReadFile and GrepSearch."


_JSON_TYPES = {str: "string", int: "integer", bool: "boolean", float: "number"}
_ARG_LINE = re.compile(r"^\s{4,}(\w+):\s*(.+)$")


def tool_spec(function: Callable[..., str]) -> ToolSpec:
    """A :class:`ToolSpec` from a typed function: its docstring is what the model sees."""
    doc = inspect.getdoc(function) or ""
    summary, _, args_part = doc.partition("\nArgs:\n")
    described: dict[str, str] = {}
    for line in ("    " + args_part.replace("\n", "\n    ")).splitlines():
        found = _ARG_LINE.match(line)
        if found:
            described[found.group(1)] = found.group(2).strip()
    properties: dict[str, Any] = {}
    required: list[str] = []
    hints = inspect.get_annotations(function, eval_str=True)
    for name, parameter in inspect.signature(function).parameters.items():
        schema: dict[str, Any] = {"type": _JSON_TYPES.get(hints.get(name, str), "string")}
        if name in described:
            schema["description"] = described[name]
        if parameter.default is inspect.Parameter.empty:
            required.append(name)
        else:
            schema["default"] = parameter.default
        properties[name] = schema
    return ToolSpec(
        name=function.__name__,
        description=" ".join(summary.split()),
        parameters={"type": "object", "properties": properties, "required": required},
    )
