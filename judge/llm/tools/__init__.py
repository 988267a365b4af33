"""ReadFile and GrepSearch over ONE transcript file.

The signatures are the reference platform's, so prompts written for it work unchanged.
The model may pass any ``filePath``; the tools only ever read the transcript they are
bound to. Lines are numbered from 1 (a line ends at ``\\n``; a trailing ``\\r`` is not
shown) and outputs are capped.

The model's arguments are untrusted (the transcript it reads can steer them): regular
expressions run on RE2 (:mod:`.patterns`), every read is bounded in bytes
(:mod:`.reader`), and each call stops at its judgement's deadline or cancellation
(:mod:`.budget`). Bad calls come back to the model as an error text, never an exception.

The docstrings of :meth:`TranscriptTools.ReadFile` and :meth:`TranscriptTools.GrepSearch`
are the tool descriptions the model sees.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judge.llm.providers.base import ToolSpec
from judge.llm.tools.deadline import ToolCancelled, ToolDeadline
from judge.llm.tools.grep import GREP_SECONDS, MAX_RESULTS_CAP, GrepResult, grep_lines
from judge.llm.tools.patterns import PatternError, compile_literal, compile_regex
from judge.llm.tools.read_file import DEFAULT_WINDOW, MAX_OUTPUT_CHARS, MAX_WINDOW, read_window
from judge.llm.tools.reader import BLOCK_BYTES, LineIndex, line_index
from judge.llm.tools.spec import tool_spec

__all__ = [
    "GREP_SECONDS",
    "MAX_OUTPUT_CHARS",
    "MAX_QUERY_CHARS",
    "MAX_RESULTS_CAP",
    "MAX_WINDOW",
    "LineIndex",
    "ToolCancelled",
    "ToolDeadline",
    "TranscriptTools",
    "line_index",
    "tool_spec",
]

#: Longest GrepSearch query (a plain-text query's case-folding set-up grows fast with
#: its length; no sensible search needs more).
MAX_QUERY_CHARS = 500


class TranscriptTools:
    """The judge's tools, bound to one transcript file.

    ``budget`` bounds every call (deadline and cancel flag of the judgement); without
    one, only each call's own limits apply.
    """

    def __init__(
        self,
        transcript: Path,
        *,
        grep_seconds: float = GREP_SECONDS,
        block_bytes: int = BLOCK_BYTES,
        budget: ToolDeadline | None = None,
    ) -> None:
        self.path = transcript
        self.grep_seconds = grep_seconds
        self.block_bytes = max(16, int(block_bytes))
        self.budget = budget or ToolDeadline()

    def line_count(self) -> int:
        """Number of lines (one streaming pass per file version; see :func:`line_index`)."""
        return line_index(self.path, self.block_bytes, self.budget).lines

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
        return read_window(self.path, start, end, self.block_bytes, self.budget, note)

    def GrepSearch(self, query: str, isRegexp: bool, maxResults: int = 20) -> str:
        """Search the conversation transcript for lines matching a query (case-insensitive).

        Returns matching lines with their line numbers, at most maxResults of them (up to
        200). Use it to find where something happened, then ReadFile around those lines.
        Regular expressions use RE2 syntax (no backreferences or lookaround).

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
        if not isRegexp and "\n" in query:
            return f"No lines match {query!r}."
        try:
            pattern = compile_regex(query) if isRegexp else compile_literal(query)
        except PatternError as exc:
            return f"Error: {exc}"
        overlap = 4096 + 4 * len(query.encode("utf-8", "replace"))
        found = grep_lines(
            self.path, pattern, limit, overlap, self.block_bytes, self.grep_seconds, self.budget
        )
        return self._grep_report(query, found)

    def _grep_report(self, query: str, found: GrepResult) -> str:
        if found.stopped_at is not None:
            head = (
                f"Search for {query!r} stopped at line {found.stopped_at}: time limit of "
                f"{self.grep_seconds:g} s reached. {len(found.hits)} matching lines before that:"
            )
        elif not found.hits:
            return f"No lines match {query!r}."
        else:
            head = f"{len(found.hits)} matching lines for {query!r}" + (
                " (more exist; narrow the query or raise maxResults):" if found.more else ":"
            )
        return "\n".join([head, *found.hits])

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
        except (TypeError, ValueError, OverflowError) as exc:
            return f"Error: bad arguments for {name}: {exc}"
        except ToolCancelled:
            return f"Error: {name} stopped: the judgement's time limit was reached."
        except OSError as exc:
            return f"Error: the transcript cannot be read: {exc.strerror or exc}"
        return f"Error: unknown tool {name!r}; the tools are ReadFile and GrepSearch."
