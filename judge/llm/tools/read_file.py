"""ReadFile: a numbered window of transcript lines.

The window is found through the file's line index (built once per file version), so
reading near the end of a huge file does not re-read it. A line longer than
MAX_LINE_CHARS is clipped; one longer than MAX_LINE_SCAN_BYTES is not even read to its
end (its length is shown as a lower bound). One call reads at most MAX_READ_BYTES.
"""

from __future__ import annotations

from pathlib import Path

from judge.files import open_regular
from judge.llm.tools.deadline import ToolDeadline
from judge.llm.tools.reader import MAX_LINE_CHARS, line_index, read_line, seek_line

DEFAULT_WINDOW = 100
MAX_WINDOW = 400
MAX_OUTPUT_CHARS = 24_000
#: Bytes one ReadFile call may read (besides building the line index once per file).
MAX_READ_BYTES = 64 << 20


def clip(text: str, limit: int, total: int | None = None, exact: bool = True) -> str:
    total = len(text) if total is None else total
    if total <= limit and exact:
        return text
    size = str(total) if exact else f"over {total}"
    return f"{text[:limit]}… [line truncated: {size} chars]"


def read_window(path: Path, start: int, end: int, block: int, budget: ToolDeadline, note: str = "") -> str:
    """The ReadFile answer for lines ``start``..``end`` (already checked: 1 <= start <= end)."""
    index = line_index(path, block, budget)
    total = index.lines
    if start > total:
        return note + f"The transcript has only {total} lines; startLine {start} is past the end."
    end = min(end, total, start + MAX_WINDOW - 1)
    out: list[str] = []
    size = 0
    shown_end = start - 1
    used = 0
    with open_regular(path, "transcript") as handle:
        seek_line(handle, index, start, block, budget)
        for number in range(start, end + 1):
            if used > MAX_READ_BYTES and out:
                break
            before = handle.tell()
            read = read_line(handle, block, budget)
            used += handle.tell() - before
            if read is None:  # the file shrank since it was indexed
                break
            line = f"{number:>6}\t{clip(read.head, MAX_LINE_CHARS, read.length, read.counted)}"
            if size + len(line) > MAX_OUTPUT_CHARS and out:
                break
            out.append(line)
            size += len(line) + 1
            shown_end = number
            if not read.counted and number < end:
                seek_line(handle, index, number + 1, block, budget)
    header = f"{note}Transcript lines {start}-{shown_end} of {total}:"
    footer = ""
    if shown_end < total:
        footer = f"\n[{total - shown_end} more lines; continue from line {shown_end + 1}]"
    return "\n".join([header, *out]) + footer
