"""What a hook answers, read strictly.

Hook answers come in two formats:

* simple: ``{"ok": true}`` / ``{"ok": false, "reason": "..."}``
* extended: ``{"decision": "allow" | "block", "reason": ..., "hookSpecificOutput": {...}}``

A rejection may add ``"impossible": true`` (either format): the work cannot be finished
without the user (a credential only they have, a decision only they can make). On Stop
that ends the loop (:mod:`judge.hooks.outcomes`); elsewhere it is an ordinary block.
``impossible`` must be a boolean, and ``true`` only beside a rejection.

:func:`parse_hook_output` is tolerant of a ```json fence and surrounding whitespace and
strict about everything else: an unparseable answer raises :class:`~judge.errors.HookError`,
it is never read as a pass.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from judge.decision import Verdict
from judge.errors import HookError

_FENCE = re.compile(r"^```(?:json|JSON)?\s*\n?(.*?)\n?```$", re.DOTALL)


@dataclass
class HookAnswer:
    """A hook's parsed answer, before the event rules are applied."""

    decision: Verdict
    reason: str | None = None
    additional_context: str | None = None
    updated_input: dict[str, Any] | None = None
    #: ``permissionDecision: "ask"``: allowed, but the user is to confirm (where there is one)
    ask: bool = False
    #: ``"impossible": true`` beside a rejection: it cannot be finished without the user
    impossible: bool = False


def _clean_reason(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise HookError(f"'reason' must be a string, got {type(value).__name__}")
    return value


def strip_fence(text: str) -> str:
    """Remove surrounding whitespace and one ```json fence, if present."""
    body = text.strip()
    match = _FENCE.match(body)
    return match.group(1).strip() if match else body


def answer_from_object(obj: Any) -> HookAnswer:
    """Interpret a parsed JSON answer in either format; raise HookError otherwise."""
    if not isinstance(obj, dict):
        raise HookError(f"hook answer must be a JSON object, got {type(obj).__name__}")
    specific = obj.get("hookSpecificOutput")
    if specific is not None and not isinstance(specific, dict):
        raise HookError("'hookSpecificOutput' must be an object")
    specific = specific or {}
    extra = specific.get("additionalContext")
    if extra is not None and not isinstance(extra, str):
        raise HookError("'hookSpecificOutput.additionalContext' must be a string")
    updated = specific.get("updatedInput", obj.get("updatedInput"))
    if updated is not None and not isinstance(updated, dict):
        raise HookError("'updatedInput' must be an object")
    reason = _clean_reason(obj.get("reason", specific.get("permissionDecisionReason")))

    if "ok" in obj:
        ok = obj["ok"]
        if not isinstance(ok, bool):
            raise HookError(f"'ok' must be true or false, got {ok!r}")
        decision: Verdict = "allow" if ok else "block"
    elif "decision" in obj:
        raw = obj["decision"]
        mapping = {"allow": "allow", "approve": "allow", "block": "block", "deny": "block"}
        if not isinstance(raw, str) or raw.lower() not in mapping:
            raise HookError(f"'decision' must be 'allow' or 'block', got {raw!r}")
        decision = "allow" if mapping[raw.lower()] == "allow" else "block"
    elif "permissionDecision" in specific:
        raw = specific["permissionDecision"]
        if raw not in ("allow", "deny", "ask"):
            raise HookError(f"'permissionDecision' must be allow/deny/ask, got {raw!r}")
        decision = "block" if raw == "deny" else "allow"
        return HookAnswer(decision, reason, extra, updated, ask=raw == "ask")
    elif specific:
        decision = "allow"
    else:
        raise HookError("hook answer has neither 'ok' nor 'decision'")
    return HookAnswer(decision, reason, extra, updated, impossible=_impossible(obj, decision))


def _impossible(obj: dict[str, Any], decision: Verdict) -> bool:
    """``impossible``: a boolean, true only beside a rejection (an approval that says the
    work is impossible contradicts itself: not a verdict)."""
    value = obj.get("impossible", False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise HookError(f"'impossible' must be true or false, got {value!r}")
    if value and decision != "block":
        raise HookError(
            "'impossible: true' goes with a rejection (ok: false / decision: block), not an approval"
        )
    return value


def parse_hook_output(text: str) -> HookAnswer:
    """Parse a hook's stdout / a verdict text strictly (fences and whitespace tolerated)."""
    body = strip_fence(text)
    if not body:
        raise HookError("hook produced no output")
    try:
        obj = json.loads(body)
    except json.JSONDecodeError as exc:
        snippet = body[:120].replace("\n", "\\n")
        raise HookError(f"hook output is not valid JSON ({exc.msg}): {snippet!r}") from None
    return answer_from_object(obj)
