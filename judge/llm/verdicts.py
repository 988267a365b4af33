"""The judge's verdict, read from its reply.

The system prompt asks for exactly one JSON object and nothing else. Models still wrap
it: in a code fence, after a few sentences of reasoning, with a trailing full stop. A
reply counts as a verdict when its LAST verdict object (``{"ok": ...}`` or
``{"decision": ...}``) ends it - after that object only whitespace, code-fence backticks
or punctuation may follow. Anything else is not a verdict (the loop asks once more, then
fails the hook), because a verdict object in the middle of prose is usually a quotation:
a judge explaining that the agent's answer *contains* ``{"ok": true}`` must not approve
it by doing so.

A verdict cut off by the answer-length cap counts when it has a decision and, for a
rejection, at least the start of its reason: a rejection cut off before its reason says
nothing the agent could act on, and read as a reason-less rejection it would be an
approval (the rules: a rejection without a reason allows). Such cuts happen in the final
verdict turn, where a local server enforces the answer schema as a grammar, so the
answer always starts as a verdict (``{"ok": false, "reason": "...``) and a small model
sometimes writes its reason on and on (greedy decoding repeats itself) until
``JUDGE_MAX_OUTPUT_TOKENS`` cuts the object off; :func:`cut_off_verdict` reads the
decision and the reason as far as it goes, so a rambling judge still decides.
"""

from __future__ import annotations

import json
import re
from typing import Any

from judge.errors import HookError
from judge.hooks.answers import answer_from_object
from judge.llm.written_calls import scan_json_spans

#: What may follow a verdict object at the end of a reply.
_TAIL = frozenset(" \t\r\n`.;!")

Verdict = tuple[bool, str | None, dict[str, Any]]


def _as_verdict(obj: Any) -> Verdict | None:
    if not (isinstance(obj, dict) and ("ok" in obj or "decision" in obj)):
        return None
    try:
        answer = answer_from_object(obj)
    except HookError:
        return None
    reason = answer.reason.strip() if answer.reason else None
    return answer.decision == "allow", reason or None, obj


def find_verdict_object(text: str) -> Verdict | None:
    """The verdict that ends ``text`` (see the module doc): (ok, reason, the object)."""
    found = scan_json_spans(text, _as_verdict)
    if not found:
        return None
    verdict, end = found[-1]
    return verdict if all(char in _TAIL for char in text[end:]) else None


def find_verdict(text: str) -> tuple[bool, str | None] | None:
    """(ok, reason) of the verdict that ends ``text``, if any."""
    found = find_verdict_object(text)
    return None if found is None else found[:2]


def cut_off(text: str) -> Verdict | None:
    """A verdict the answer-length cap cut off, when it still decides something. A whole
    verdict object is not one, whatever follows it (that is :func:`find_verdict_object`'s
    to judge)."""
    if scan_json_spans(text, _as_verdict):
        return None
    cut = cut_off_verdict(text)
    if cut is None or cut == (False, None):
        return None
    return cut[0], cut[1], {}


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
