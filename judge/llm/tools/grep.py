"""GrepSearch: the transcript's lines matching a query.

The file is read in blocks of whole lines and each block is searched whole with one
compiled pattern (see :mod:`judge.llm.tools.patterns`), counting newlines only up to
each hit, so a 1 GB transcript is searched in bounded memory at close to grep's speed.
A search stops at its own time limit (answering with what it found) and at its hook's
deadline; a regex with a big program is searched in smaller blocks so both are checked
often.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from judge.files import open_regular
from judge.llm.tools.deadline import ToolDeadline
from judge.llm.tools.patterns import Pattern
from judge.llm.tools.reader import Chunk, chunks

MAX_MATCH_LINE_CHARS = 400
MAX_OUTPUT_CHARS = 24_000
MAX_RESULTS_CAP = 200
GREP_SECONDS = 2.0

Text = str | bytearray | bytes


@dataclass
class _Cursor:
    #: number of the line the current chunk begins in
    number: int = 1
    #: last line number a match was found on
    reached: int = 0


def _check(deadline: float, budget: ToolDeadline) -> None:
    budget.check()
    if time.monotonic() >= deadline:
        raise TimeoutError


def _chunk_hits(
    pattern: Pattern,
    data: Text,
    size: int,
    chunk: Chunk,
    cursor: _Cursor,
    deadline: float,
    budget: ToolDeadline,
) -> Iterator[tuple[int, str]]:
    """(line number, text to show) per matching line of one chunk; moves ``cursor`` past it.

    One result per line. A match that runs over a newline does not count: that line
    alone is searched again, as grep would. Raises ``TimeoutError`` at the deadline.
    """
    newline: Text = "\n" if isinstance(data, str) else b"\n"
    number, counted, pos = cursor.number, 0, 0
    while pos <= size:
        _check(deadline, budget)
        found = pattern.search(data, pos, size)
        if found is None:
            break
        hit = found[0]
        if hit == size and (size == 0 or data.endswith(newline, 0, size)):  # type: ignore[arg-type]
            break  # an empty match after the last newline is not a line
        start = data.rfind(newline, 0, hit) + 1  # type: ignore[arg-type]
        end = data.find(newline, hit)  # type: ignore[arg-type]
        end = size if end < 0 else end
        pos = end + 1
        if found[1] > end:
            found = pattern.search(data, start, end)
            if found is None:
                continue
            hit = found[0]
        number += data.count(newline, counted, start)  # type: ignore[arg-type]
        counted = start
        cursor.reached = number
        head_cut = start == 0 and not chunk.starts
        tail_cut = end == size and chunk.continues
        yield number, _excerpt(data, start, end, hit, head_cut, tail_cut)
    cursor.number = number + data.count(newline, counted, size)  # type: ignore[arg-type]


def _excerpt(data: Text, start: int, end: int, hit: int, head_cut: bool, tail_cut: bool) -> str:
    """The matching line for the report: whole when short, else clipped around the match."""
    line, before = data[start:end], data[start:hit]
    if isinstance(line, str) and isinstance(before, str):
        text, offset = line, len(before)
    elif isinstance(line, (bytes, bytearray)) and isinstance(before, (bytes, bytearray)):
        text = line.decode("utf-8", "replace")
        offset = len(before.decode("utf-8", "replace"))
    else:
        raise TypeError(type(line))
    if not tail_cut and text.endswith("\r"):
        text = text[:-1]
    limit = MAX_MATCH_LINE_CHARS
    if len(text) <= limit and not (head_cut or tail_cut):
        return text
    begin = 0 if offset < limit - 100 else offset - 100
    lead = "…" if begin or head_cut else ""
    size = f"over {len(text)}" if head_cut or tail_cut else str(len(text))
    return f"{lead}{text[begin : begin + limit]}… [line truncated: {size} chars]"


def _as_searched(pattern: Pattern, chunk: Chunk) -> Text:
    """What a chunk is searched as: its bytes, or its decoded text (CRLF read as LF)."""
    if pattern.on_bytes:
        # A copy that ends where the chunk ends (RE2 reads bytes past an end position as
        # context: ``$`` would not match there), with CRLF read as LF: line numbers count
        # LFs, so they are unchanged, and ``$`` matches before a CRLF too.
        data = bytes(memoryview(chunk.data)[: chunk.end])
        return data.replace(b"\r\n", b"\n") if b"\r" in data else data
    text = str(memoryview(chunk.data)[: chunk.end], "utf-8", "replace")
    return text.replace("\r\n", "\n") if "\r" in text else text


@dataclass(frozen=True)
class GrepResult:
    hits: list[str]
    #: more matching lines exist than were returned
    more: bool
    #: the line the search stopped at when it ran out of time, else None
    stopped_at: int | None = None


def grep_lines(
    path: Path, pattern: Pattern, limit: int, overlap: int, block: int, seconds: float, budget: ToolDeadline
) -> GrepResult:
    """Matching lines of ``path``, up to ``limit`` of them and MAX_OUTPUT_CHARS in all."""
    deadline = time.monotonic() + seconds
    if pattern.block_limit is not None:
        block = max(16, min(block, pattern.block_limit))
    hits: list[str] = []
    size = 0
    last = 0
    cursor = _Cursor()
    try:
        with open_regular(path, "transcript") as handle:
            for chunk in chunks(handle, block, overlap, budget):
                data = _as_searched(pattern, chunk)
                for number, text in _chunk_hits(pattern, data, len(data), chunk, cursor, deadline, budget):
                    if number == last:
                        continue  # a later piece of a line already reported
                    line = f"{number}: {text}"
                    if len(hits) >= limit or size + len(line) > MAX_OUTPUT_CHARS:
                        return GrepResult(hits, more=True)
                    hits.append(line)
                    size += len(line) + 1
                    last = number
    except TimeoutError:
        return GrepResult(hits, more=False, stopped_at=max(cursor.number, cursor.reached))
    return GrepResult(hits, more=False)
