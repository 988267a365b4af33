"""Hook results (what a hook answers) and decisions (what the gate answers).

Hook answers come in two formats:

* simple: ``{"ok": true}`` / ``{"ok": false, "reason": "..."}``
* extended: ``{"decision": "allow" | "block", "reason": ..., "hookSpecificOutput": {...}}``

:func:`parse_hook_output` is tolerant of a ```json fence and surrounding whitespace and
strict about everything else: an unparseable answer raises :class:`HookError`, it is
never read as a pass.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from judge.errors import HookError

if TYPE_CHECKING:
    from judge.config import Hook

Verdict = Literal["allow", "block"]

_FENCE = re.compile(r"^```(?:json|JSON)?\s*\n?(.*?)\n?```$", re.DOTALL)


class Usage(BaseModel):
    """Token usage of one prompt hook."""

    model_config = ConfigDict(populate_by_name=True)

    input_tokens: int = Field(0, alias="inputTokens")
    output_tokens: int = Field(0, alias="outputTokens")

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            inputTokens=self.input_tokens + other.input_tokens,
            outputTokens=self.output_tokens + other.output_tokens,
        )


class CascadeStage(BaseModel):
    """One stage of a model cascade (a hook whose ``model`` is a list), as judged."""

    model_config = ConfigDict(populate_by_name=True)

    model: str
    #: ``error``: no verdict (a failure, timeout or unparseable answer).
    verdict: Literal["allow", "block", "error"]
    reason: str | None = None
    error: str | None = None
    duration_ms: float = Field(0.0, alias="durationMs")
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = Field(None, alias="costUsd")
    #: Later stages: whether this verdict is the previous stage's (None when either has none).
    agreed: bool | None = None


class CascadeError(HookError):
    """Every stage of a cascade failed; ``stages`` says how."""

    def __init__(self, message: str, stages: list[CascadeStage], model: str | None = None) -> None:
        super().__init__(message, model)
        self.stages = stages


@dataclass
class HookAnswer:
    """A hook's parsed answer, before the event rules are applied."""

    decision: Verdict
    reason: str | None = None
    additional_context: str | None = None
    updated_input: dict[str, Any] | None = None
    #: ``permissionDecision: "ask"``: allowed, but the user is to confirm (where there is one)
    ask: bool = False


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
    return HookAnswer(decision, reason, extra, updated)


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


# ---------------------------------------------------------------------------
# The prompt-hook interface the engine calls (filled in by judge.llm)


@dataclass(frozen=True)
class PromptRequest:
    """Everything a prompt judge needs for one judgement."""

    hook: Hook
    context: dict[str, Any]
    transcript_path: Path | None = None
    models: dict[str, str] = field(default_factory=dict)
    base_dir: Path | None = None
    repeat: int = 0


class Citation(BaseModel):
    """A verified piece of evidence: a transcript line number (as the judge's ReadFile shows
    it) and the text quoted from it (``evidence: required``, see :mod:`judge.llm.evidence`)."""

    model_config = ConfigDict(frozen=True)

    line: int
    quote: str


class PromptVerdict(BaseModel):
    """A prompt judge's answer in the simple format, with what it cost."""

    ok: bool
    reason: str | None = None
    model: str | None = None
    usage: Usage = Field(default_factory=Usage)
    #: The verified citations of a rejection (hooks with ``evidence: required``).
    citations: list[Citation] | None = None
    #: A cascade's stages, in the order they were called (None: one model).
    stages: list[CascadeStage] | None = None


class PromptJudge(Protocol):
    """Evaluates one prompt hook. Raise :class:`HookError` when no verdict can be had."""

    async def evaluate(self, request: PromptRequest) -> PromptVerdict: ...


# ---------------------------------------------------------------------------
# What the gate answers


class HookOutcome(BaseModel):
    """The outcome of one hook, as reported in ``hooks[]``."""

    model_config = ConfigDict(populate_by_name=True)

    level: Literal["agent", "custom"]
    index: int
    type: Literal["prompt", "command"]
    decision: Verdict
    reason: str | None = None
    error: str | None = None
    duration_ms: float = Field(0.0, alias="durationMs")
    model: str | None = None
    usage: Usage | None = None
    #: What the judgement cost in US dollars (None: no model call, or the price is unknown).
    cost_usd: float | None = Field(None, alias="costUsd")
    additional_context: str | None = Field(None, exclude=True)
    updated_input: dict[str, Any] | None = Field(None, exclude=True)
    #: a PreToolUse hook allowed the call for the user to confirm (``permissionDecision: "ask"``)
    asks: bool = Field(False, exclude=True)
    counts_as_rejection: bool = Field(False, exclude=True)
    #: ``"shadow"`` for a shadow hook: what it would have decided, never acted on.
    mode: Literal["shadow"] | None = None
    #: The verified evidence of a rejection (``evidence: required``); omitted when None.
    citations: list[Citation] | None = None
    #: A cascade hook's stages as called (model, verdict, duration, tokens, cost, agreement).
    stages: list[CascadeStage] | None = None

    @property
    def effective(self) -> bool:
        """Whether this outcome takes part in the decision (shadow hooks never do)."""
        return self.mode != "shadow"

    def failure_line(self, event: str, verb: str = "failed", error: str | None = None) -> str:
        """``<event> hook agent[0] (prompt, <model>) failed: <error> -> allow (its failMode)``
        (``error``: the error as it should be shown, default the whole of it)."""
        model = f", {self.model}" if self.model else ""
        shown = self.error if error is None else error
        where = f"{event} hook {self.level}[{self.index}] ({self.type}{model})"
        return f"{where} {verb}: {shown} -> {self.decision} (its failMode)"


def last_additional_context(outcomes: list[HookOutcome]) -> str | None:
    """The additionalContext of the last hook that gave one (later hooks win; shadow hooks
    never add context)."""
    extra = [o.additional_context for o in outcomes if o.effective and o.additional_context is not None]
    return extra[-1] if extra else None


def asked(outcomes: list[HookOutcome]) -> str | None:
    """The reasons of the PreToolUse hooks that want the user asked ("" without one), or
    None when none does (shadow hooks never ask)."""
    asking = [o for o in outcomes if o.asks and o.effective]
    return "\n".join(o.reason for o in asking if o.reason) if asking else None


class Decision(BaseModel):
    """The gate's answer for one event."""

    model_config = ConfigDict(populate_by_name=True)

    event: str = Field(exclude=True)
    decision: Verdict
    reason: str | None = None
    forced_stop: bool = Field(False, alias="forcedStop")
    rejection_count: int = Field(0, alias="rejectionCount")
    additional_context: str | None = Field(None, exclude=True)
    updated_input: dict[str, Any] | None = Field(None, alias="updatedInput")
    #: PreToolUse allowed, but a hook asks for the user's confirmation: its reason (or "");
    #: acted on where a user can be asked (Claude Code), otherwise an allow
    ask: str | None = Field(None, exclude=True)
    hooks: list[HookOutcome] = Field(default_factory=list)
    #: problems beside the decision that the caller should show (say, an unwritable audit log)
    notes: list[str] = Field(default_factory=list, exclude=True)

    def to_json(self) -> dict[str, Any]:
        """The decision JSON (optional fields only when present)."""
        out: dict[str, Any] = {
            "decision": self.decision,
            "reason": self.reason,
            "forcedStop": self.forced_stop,
            "rejectionCount": self.rejection_count,
        }
        if self.additional_context is not None:
            out["hookSpecificOutput"] = {
                "hookEventName": self.event,
                "additionalContext": self.additional_context,
            }
        if self.updated_input is not None:
            out["updatedInput"] = self.updated_input
        out["hooks"] = [
            h.model_dump(
                by_alias=True,
                exclude={
                    k
                    for k, v in (
                        ("mode", h.mode),
                        ("cost_usd", h.cost_usd),
                        ("stages", h.stages),
                        ("citations", h.citations),
                    )
                    if v is None
                },
            )
            for h in self.hooks
        ]
        if any(h.cost_usd is not None for h in self.hooks):
            out["costUsd"] = self.cost_usd
        return out

    @property
    def cost_usd(self) -> float:
        """What the hooks' model calls cost (those with a known price), in US dollars."""
        return round(sum(h.cost_usd or 0.0 for h in self.hooks), 8)

    def error_lines(self) -> list[str]:
        """One line per hook that failed: where, which model, what, and what it decided."""
        return [hook.failure_line(self.event) for hook in self.hooks if hook.error is not None]

    @property
    def blocked_tool_result(self) -> str | None:
        """PostToolUse: what the agent sees instead of a withheld tool result."""
        if self.event == "PostToolUse" and self.decision == "block":
            return f"[Hook Blocked Tool Result] {self.reason}"
        return None
