"""The judge's verdict, read from its reply.

The system prompt asks for exactly one JSON object and nothing else. Models still wrap
it: in a code fence, after a few sentences of reasoning, with a trailing full stop; and a
judge that explains its decision may quote the agent's text, which the agent can make
look like a verdict. So a reply is read as follows (:func:`find_verdict_object`):

* **a rejection anywhere decides**: the reply's first rejection object (``{"ok": false,
  ...}``, ``{"decision": "block", ...}``) is its verdict, whatever comes after it - prose,
  or another verdict object (a judge that rejects and then quotes the agent's
  ``{"ok": true}`` has rejected). Nothing later in the reply overrides a rejection, and a
  rejection followed by prose is that rejection, not a hook error (which a Stop's default
  failMode would allow);
* **an approval must end the reply**: with no rejection in it, the reply approves only
  when its LAST verdict object ends it - after that object only whitespace, code-fence
  backticks or punctuation may follow. An approval in the middle of prose is usually a
  quotation (a judge explaining that the agent's answer *contains* ``{"ok": true}``) and
  is not a verdict (the loop asks once more, then fails the hook);
* **a key given twice is refused**: JSON parsers keep the last of two equal keys, so
  ``{"ok": false, "reason": "no", "ok": true}`` would approve. Such an object is never an
  approval: when any of its values rejects, it is that rejection (with its first reason);
  otherwise it is no verdict.

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


class _Repeated(dict[str, Any]):
    """A JSON object with a key given twice: the values as the parser keeps them (the
    last), plus every (key, value) pair as written."""

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)
        self.pairs = pairs


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = {key for key, _ in pairs}
    return dict(pairs) if len(keys) == len(pairs) else _Repeated(pairs)


#: Decodes objects with a repeated key as :class:`_Repeated`.
_DECODER = json.JSONDecoder(object_pairs_hook=_object)


def _as_verdict(obj: Any) -> Verdict | None:
    if not (isinstance(obj, dict) and ("ok" in obj or "decision" in obj)):
        return None
    if isinstance(obj, _Repeated):
        return _repeated_verdict(obj)
    try:
        answer = answer_from_object(obj)
    except HookError:
        return None
    reason = answer.reason.strip() if answer.reason else None
    return answer.decision == "allow", reason or None, obj


#: Not a verdict, but it holds the scan's place: a repeated key that decides nothing.
_REFUSED: Verdict = (True, None, {})


def _repeated_verdict(obj: _Repeated) -> Verdict:
    """A rejection when any value of a repeated ``ok``/``decision`` rejects, else refused."""
    rejects = any(
        (key == "ok" and value is False)
        or (key == "decision" and isinstance(value, str) and value.lower() in ("block", "deny"))
        for key, value in obj.pairs
    )
    if not rejects:
        return _REFUSED
    reasons = [v.strip() for k, v in obj.pairs if k == "reason" and isinstance(v, str) and v.strip()]
    return False, reasons[0] if reasons else None, dict(obj)


def _verdicts(text: str) -> list[tuple[Verdict, int]]:
    return scan_json_spans(text, _as_verdict, _DECODER)


def find_verdict_object(text: str) -> Verdict | None:
    """The reply's verdict (see the module doc): (ok, reason, the object)."""
    found = _verdicts(text)
    for verdict, _ in found:
        if verdict is not _REFUSED and not verdict[0]:
            return verdict  # the first rejection decides
    if not found or any(verdict is _REFUSED for verdict, _ in found):
        return None
    verdict, end = found[-1]
    return verdict if all(char in _TAIL for char in text[end:]) else None


def find_verdict(text: str) -> tuple[bool, str | None] | None:
    """(ok, reason) of the reply's verdict, if any."""
    found = find_verdict_object(text)
    return None if found is None else found[:2]


def cut_off(text: str) -> Verdict | None:
    """A verdict the answer-length cap cut off, when it still decides something. A whole
    verdict object is not one, whatever follows it (that is :func:`find_verdict_object`'s
    to judge)."""
    if _verdicts(text):
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
