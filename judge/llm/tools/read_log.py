"""What the judge has already read of the transcript during one judgement.

Small models loop: they read the same five lines again and again, or keep calling
tools after they have seen everything, until the hook's time runs out. :class:`ReadLog`
keeps each judgement's reading honest and short:

- a call repeating an earlier one (the same tool and arguments, or a ReadFile window
  whose lines were all shown already) is not run again: the model is told its result
  is above;
- once every line of the transcript has been shown in full (no line clipped), nothing
  more can be learnt from the tools, so the loop asks for the verdict (the final turn,
  where the answer schema applies).
"""

from __future__ import annotations

import json
import re
from typing import Any

_WINDOW = re.compile(r"^(?:\(Note:[^\n]*\n)?Transcript lines (\d+)-(\d+) of (\d+):", re.MULTILINE)
_CLIPPED = "… [line truncated:"
#: How the tools' answers that searched nothing begin (bad arguments, unknown tool...).
_NOTHING_SHOWN = "Error:"

REPEATED = (
    "Not run again: you already made this call and its result is above. Do not repeat a "
    "call: read other lines, search for something else, or give your verdict."
)
ALL_READ = (
    "You have now read the whole transcript (all {lines} lines). Nothing more can be found with the tools."
)
#: Ends the results before the verdict turn. Tool results push the check far up the
#: conversation; restating where it is, right where the model decides, keeps small models
#: from answering the transcript instead of the hook author's question.
DECIDE = (
    "Now decide the hook author's check (in <hook_instructions> above) from the hook context "
    "and what the transcript shows, and reply with only the verdict JSON object."
)


class ReadLog:
    """The calls made and the transcript lines shown in full, in one judgement."""

    def __init__(self) -> None:
        self._calls: set[str] = set()
        self._shown: list[tuple[int, int]] = []  # merged, sorted line ranges
        self._total: int | None = None
        self._clipped = False
        self._read = False

    def has_read(self) -> bool:
        """Whether any call has looked at the transcript: a ReadFile window, or a search
        that ran (its matches or none); not an error or a window past the end."""
        return self._read

    @staticmethod
    def _key(name: str, arguments: dict[str, Any] | None) -> str:
        return name + json.dumps(arguments, sort_keys=True, default=str)

    def is_repeat(self, name: str, arguments: dict[str, Any] | None) -> bool:
        """Whether this call would show nothing new (see the module docstring)."""
        if self._key(name, arguments) in self._calls:
            return True
        if name != "ReadFile" or not arguments or self._total is None:
            return False
        try:
            start = max(1, int(arguments.get("startLine", 1)))
            end = min(int(arguments.get("endLine", start)), self._total)
        except (TypeError, ValueError, OverflowError):
            return False
        return start <= end and any(a <= start and end <= b for a, b in self._shown)

    def record(self, name: str, arguments: dict[str, Any] | None, output: str) -> None:
        """Note a call that was run and what its output showed."""
        self._calls.add(self._key(name, arguments))
        if name != "ReadFile":
            if not output.lstrip().startswith(_NOTHING_SHOWN):
                self._read = True  # a search ran: its matches, or that nothing matches
            return
        found = _WINDOW.search(output)
        if found is None:
            return
        self._read = True
        start, end, total = (int(group) for group in found.groups())
        self._total = total
        if _CLIPPED in output:
            self._clipped = True
        self._shown = _merge([*self._shown, (start, end)])

    def all_read(self) -> int | None:
        """The transcript's line count once every line has been shown in full, else None."""
        if self._total is None or self._clipped:
            return None
        if self._shown and self._shown[0][0] <= 1 and self._shown[0][1] >= self._total:
            return self._total
        return None


def _merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged
