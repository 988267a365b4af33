"""A verdict cut off by the answer-length cap.

In the final verdict turn a local server enforces the answer schema as a grammar, so the
answer always starts as a verdict: ``{"ok": false, "reason": "...``. A small model then
sometimes writes its reason on and on (greedy decoding repeats itself) until the
``JUDGE_MAX_OUTPUT_TOKENS`` cap cuts the object off. The decision was already given in
its first field; :func:`cut_off_verdict` reads it and the reason as far as it goes, so a
rambling judge still decides instead of failing the hook.
"""

from __future__ import annotations

import json
import re

_HEAD = re.compile(
    r'\s*(?:```(?:json)?\s*)?\{\s*"ok"\s*:\s*(true|false)\s*(?:,\s*"reason"\s*:\s*"(.*))?\Z', re.DOTALL
)
#: A JSON string's body up to its closing quote.
_STRING = re.compile(r'((?:[^"\\]|\\.)*)"', re.DOTALL)
#: Most characters of a cut-off reason kept (the rest is usually the model repeating itself).
MAX_REASON = 1000
MARK = " [...]"


def cut_off_verdict(text: str) -> tuple[bool, str | None] | None:
    """``(ok, reason)`` from a verdict object that was cut off, else None.

    Only a text that IS the start of a verdict object counts (nothing before it but a
    code fence): ``ok`` must be its first field.
    """
    found = _HEAD.match(text)
    if found is None:
        return None
    ok = found.group(1) == "true"
    raw = found.group(2)
    if raw is None:
        return ok, None
    whole = _STRING.match(raw)
    if whole is not None:  # the reason is complete; the cut came later (in the citations)
        try:
            reason = json.loads(f'"{whole.group(1)}"').strip()
        except json.JSONDecodeError:
            reason = whole.group(1).strip()
        return ok, reason or None
    raw = raw[:MAX_REASON]
    if raw.endswith("\\") and not raw.endswith("\\\\"):
        raw = raw[:-1]  # half an escape sequence
    try:
        reason = json.loads(f'"{raw}"')
    except json.JSONDecodeError:
        reason = raw
    reason = reason.strip()
    return ok, (reason + MARK) if reason else None
