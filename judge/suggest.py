"""Near misses of known names: the one "did you mean" every message uses.

Every place that takes a name from a fixed set (a configuration's keys, hook events, case
labels, tiers, ``JUDGE_MODEL_<TIER>`` variables, command-line choices) names the closest
known one when a name is not known, so ``maxRejection``, ``promt``, ``--event stop`` or
a label ``Block`` get the fix with the error.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

#: How similar a word must be to a known name to be suggested (difflib's ratio).
CUTOFF = 0.75


def _folded(name: str) -> str:
    """Case, ``_`` and ``-`` do not matter: ``fail_mode`` is close to ``failMode``."""
    return name.lower().replace("_", "").replace("-", "")


def closest(word: str, known: Iterable[str], cutoff: float = CUTOFF) -> str | None:
    """The known name ``word`` most likely misspells, or None (``word`` itself is known)."""
    names = [name for name in dict.fromkeys(known) if name != word]
    folded = _folded(word)
    for name in names:
        if _folded(name) == folded:
            return name
    by_folded = {_folded(name): name for name in names}
    found = difflib.get_close_matches(folded, list(by_folded), n=1, cutoff=cutoff)
    return by_folded[found[0]] if found else None


def did_you_mean(word: str, known: Iterable[str], cutoff: float = CUTOFF) -> str:
    """`` (did you mean X?)`` for the closest known name, else ``""``."""
    near = closest(word, known, cutoff)
    return f" (did you mean {near}?)" if near is not None else ""
