"""Compiling GrepSearch queries: model-chosen regexes on RE2, literals on ``regex``.

The judge model chooses the query, and what it reads (the agent's transcript) can steer
it, so a query is hostile input. Regular expressions are compiled by RE2
(``google-re2``): linear-time matching, no backtracking, and compilation bounded by
``max_mem`` — a huge counted repeat such as ``(a{999}){999}`` is refused at once
instead of compiling for seconds with the GIL held. RE2 has no backreferences or
lookaround; such a query gets an error text naming what is unsupported, so the model
can retry with a plain pattern. Plain-text queries are escaped literals (linear to
compile) searched with case folding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import re2
import regex

#: Memory RE2 may use for one compiled pattern (its program and matching caches).
RE2_MAX_MEM = 8 << 20
#: Work one search call may do, in bytes scanned × program instructions (about 30 ms
#: at worst): a regex with a big program is searched in smaller blocks, so the time
#: limit and the hook's cancellation are checked often.
REGEX_WORK_PER_BLOCK = 1 << 26

_UNSUPPORTED = {
    "invalid escape sequence: \\": "backreferences (\\1) are not supported",
    "invalid perl operator: (?=": "lookahead (?=...) is not supported",
    "invalid perl operator: (?!": "negative lookahead (?!...) is not supported",
    "invalid perl operator: (?<=": "lookbehind (?<=...) is not supported",
    "invalid perl operator: (?<!": "negative lookbehind (?<!...) is not supported",
    "invalid repetition size": "counted repeats are limited to {1000} (and their product to about that)",
    "bad repetition operator": "a repeat is applied to nothing or to another repeat",
    "pattern too large": "the pattern compiles to a program over the memory limit",
}


class PatternError(ValueError):
    """A query that cannot be searched; the message is shown to the model."""


@dataclass(frozen=True)
class Pattern:
    """A compiled query: ``search(data, pos, end)`` gives (start, end) of a match or None."""

    compiled: Any
    #: search the raw UTF-8 bytes (else the decoded text)
    on_bytes: bool
    #: bytes scanned per search call, at most (see REGEX_WORK_PER_BLOCK)
    block_limit: int | None = None

    def search(self, data: Any, pos: int, end: int) -> tuple[int, int] | None:
        found = self.compiled.search(data, pos, end)
        return None if found is None else (found.start(), found.end())


def _re2_options() -> Any:
    options = re2.Options()
    options.case_sensitive = False
    options.never_capture = True  # only the match span is used; capture-free is fastest
    options.max_mem = RE2_MAX_MEM
    options.log_errors = False
    return options


def _explain(message: str) -> str:
    for needle, meaning in _UNSUPPORTED.items():
        if needle in message:
            return f"{meaning} ({message})"
    return message


def compile_regex(query: str) -> Pattern:
    """An RE2 pattern for a model-chosen regular expression (case-insensitive, ``^``/``$``
    at line ends). Raises :class:`PatternError` with a message for the model."""
    try:
        compiled = re2.compile("(?m)" + query, _re2_options())
    except re2.error as exc:
        raw = exc.args[0] if exc.args else exc
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        raise PatternError(
            f"invalid regular expression {query!r}: {_explain(text)}. Regular expressions use "
            "RE2 syntax (no backreferences or lookaround); simplify it or search for plain text."
        ) from None
    size = max(1, int(compiled.programsize))
    return Pattern(compiled, on_bytes=True, block_limit=max(4096, REGEX_WORK_PER_BLOCK // size))


def compile_literal(query: str) -> Pattern:
    """A case-insensitive plain-text query: raw bytes when ASCII, else full case folding."""
    if query.isascii():  # the fast path: search the raw bytes
        return Pattern(regex.compile(regex.escape(query.encode("ascii")), regex.IGNORECASE), on_bytes=True)
    flags = regex.IGNORECASE | regex.FULLCASE | regex.VERSION0
    return Pattern(regex.compile(regex.escape(query), flags), on_bytes=False)
