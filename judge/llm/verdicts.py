"""The judge's verdict, read from its reply.

The system prompt asks for exactly one JSON object and nothing else. Models still wrap
it: in a code fence, after a few sentences of reasoning, with a trailing full stop. A
reply counts as a verdict when its LAST verdict object (``{"ok": ...}`` or
``{"decision": ...}``) ends it - after that object only whitespace, code-fence backticks
or punctuation may follow. Anything else is not a verdict (the loop asks once more, then
fails the hook), because a verdict object in the middle of prose is usually a quotation:
a judge explaining that the agent's answer *contains* ``{"ok": true}`` must not approve
it by doing so.

A verdict cut off by the answer-length cap (:mod:`judge.llm.truncated`) counts when it
has a decision and, for a rejection, at least the start of its reason: a rejection cut
off before its reason says nothing the agent could act on, and read as a reason-less
rejection it would be an approval (the rules: a rejection without a reason allows).
"""

from __future__ import annotations

from typing import Any

from judge.errors import HookError
from judge.hooks.answers import answer_from_object
from judge.llm.text_tools import scan_json_spans
from judge.llm.truncated import cut_off_verdict

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
