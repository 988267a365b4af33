"""ReadFile and GrepSearch over ONE transcript file (SPEC §5).

The signatures are the reference platform's, so prompts written for it work unchanged.
The model may pass any ``filePath``; the tools only ever read the transcript they are
bound to. Lines are numbered from 1, outputs are capped, and files are streamed so a
1 GB transcript is searched in bounded memory. Regular expressions run on the ``regex``
engine with one time budget per call, so a catastrophic pattern returns promptly.

The docstrings of :meth:`TranscriptTools.ReadFile` and :meth:`TranscriptTools.GrepSearch`
are the tool descriptions the model sees.
"""

from __future__ import annotations

import inspect
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import regex

from judge.llm.providers.base import ToolSpec

#: Longest piece of a line read at once; longer lines are read in pieces (same number).
MAX_SEGMENT_CHARS = 1_000_000
DEFAULT_WINDOW = 100
MAX_WINDOW = 400
MAX_LINE_CHARS = 2000
MAX_MATCH_LINE_CHARS = 400
MAX_OUTPUT_CHARS = 24_000
MAX_RESULTS_CAP = 200
GREP_SECONDS = 2.0


def iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text without newline), streaming; very long lines come in pieces."""
    with path.open("r", encoding="utf-8", errors="replace", newline=None) as handle:
        number = 1
        while True:
            piece = handle.readline(MAX_SEGMENT_CHARS)
            if not piece:
                return
            if piece.endswith("\n"):
                yield number, piece[:-1]
                number += 1
            else:
                yield number, piece


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [line truncated: {len(text)} chars]"


class TranscriptTools:
    """The judge's tools, bound to one transcript file."""

    def __init__(self, transcript: Path, *, grep_seconds: float = GREP_SECONDS) -> None:
        self.path = transcript
        self.grep_seconds = grep_seconds
        self._line_count: int | None = None

    def line_count(self) -> int:
        """Number of lines (computed once, streaming)."""
        if self._line_count is None:
            count = 0
            last = b"\n"
            with self.path.open("rb") as handle:
                while chunk := handle.read(1 << 20):
                    count += chunk.count(b"\n")
                    last = chunk[-1:]
            self._line_count = count + (0 if last == b"\n" else 1)
        return self._line_count

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
        total = self.line_count()
        if start > total:
            return note + f"The transcript has only {total} lines; startLine {start} is past the end."
        end = min(end, total, start + MAX_WINDOW - 1)
        out: list[str] = []
        size = 0
        shown_end = start - 1
        for number, text in iter_lines(self.path):
            if number < start or number == shown_end:  # later pieces of a long line
                continue
            if number > end:
                break
            line = f"{number:>6}\t{_clip(text, MAX_LINE_CHARS)}"
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
        try:
            limit = max(1, min(int(maxResults), MAX_RESULTS_CAP))
        except (TypeError, ValueError):
            limit = 20
        match: Callable[[str, float], bool]
        if isRegexp:
            try:
                pattern = regex.compile(query, regex.IGNORECASE | regex.VERSION0)
            except (regex.error, re.error, ValueError, OverflowError) as exc:
                return f"Error: invalid regular expression {query!r}: {exc}"

            def match(text: str, budget: float) -> bool:
                return pattern.search(text, timeout=budget) is not None

        else:
            needle = query.casefold()

            def match(text: str, budget: float) -> bool:
                return needle in text.casefold()

        deadline = time.monotonic() + self.grep_seconds
        hits: list[str] = []
        size = 0
        more = False
        last_number = 0
        try:
            for number, text in iter_lines(self.path):
                if number == last_number and hits and hits[-1].startswith(f"{number}:"):
                    continue  # a later piece of a line already reported
                budget = deadline - time.monotonic()
                if budget <= 0:
                    return self._grep_report(query, hits, more, stopped_at=number)
                if not match(text, budget):
                    continue
                if len(hits) >= limit:
                    more = True
                    break
                line = f"{number}: {_clip(text, MAX_MATCH_LINE_CHARS)}"
                if size + len(line) > MAX_OUTPUT_CHARS:
                    more = True
                    break
                hits.append(line)
                size += len(line) + 1
                last_number = number
        except TimeoutError:
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
