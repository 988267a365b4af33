"""What the gate answers: the :class:`Decision` for one event, with one :class:`HookOutcome`
per hook that ran (its verdict, reason, error, model, :class:`Usage`, citations, cascade
stages, samples, the :class:`HookCalibration` that let it enforce or not) and, on Stop,
its :data:`StopOutcome`. ``Decision.to_json()`` is the decision JSON of ``judge run``, the
service and the logs. How a hook's own answer is read is :mod:`judge.hooks.answers`;
which outcome a Stop round gets is :mod:`judge.hooks.outcomes`.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from judge.state.stop_memory import StopMemory

Verdict = Literal["allow", "block"]
#: How a Stop ended (every Stop and SubagentStop decision has one; the rules and the order
#: in which they apply are :mod:`judge.hooks.outcomes`).
StopOutcome = Literal[
    "approved", "rejected", "forced", "impossible", "stalled", "deferred", "failed_open", "failed_closed"
]
STOP_OUTCOMES: tuple[str, ...] = get_args(StopOutcome)


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


class SampleVerdict(BaseModel):
    """One of a prompt hook's samples (``samples: k``): its verdict and reason."""

    #: ``error``: this sample has no verdict (see ``error``); it is left out of the vote.
    verdict: Literal["allow", "block", "error"]
    reason: str | None = None
    error: str | None = None


CalibrationStatus = Literal["missing", "stale", "below", "ok"]


class HookCalibration(BaseModel):
    """Whether a prompt hook with a ``calibration:`` block may enforce, and why: ``ok`` (its
    record matches the hook's prompt and model and meets every floor), ``missing`` (no file,
    or no record for this hook), ``stale`` (a record for this hook's place, but measured with
    another prompt or model) or ``below`` (a floor is not met). Anything but ``ok`` runs the
    hook as shadow."""

    model_config = ConfigDict(populate_by_name=True, frozen=True)

    status: CalibrationStatus
    #: Why, in words (``ok``: what was measured).
    reason: str
    #: The calibration file, as the hook names it.
    file: str | None = None
    #: The matching record's figures (absent without one).
    cases: int | None = None
    kappa: float | None = None
    block_precision: float | None = Field(None, alias="blockPrecision")
    block_recall: float | None = Field(None, alias="blockRecall")
    #: When the record was measured (ISO 8601).
    measured_at: str | None = Field(None, alias="measuredAt")

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True)


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
    #: ``samples`` > 1: each sample of this stage, and the share that gave its verdict.
    samples: list[SampleVerdict] | None = None
    agreement: float | None = None


class Citation(BaseModel):
    """A verified piece of evidence: a transcript line number (as the judge's ReadFile shows
    it) and the text quoted from it (``evidence: required``, see :mod:`judge.llm.evidence`)."""

    model_config = ConfigDict(frozen=True)

    line: int
    quote: str


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
    #: Stop: the hook rejected as work that cannot be finished without the user (its answer
    #: said ``"impossible": true``); omitted when false.
    impossible: bool = False
    #: Stop: the prompt hook was not run because background tasks were still running
    #: (``backgroundTasks: defer``); omitted when false.
    deferred: bool = False
    #: ``samples`` > 1: each sample's verdict and reason, in order.
    samples: list[SampleVerdict] | None = None
    #: ``samples`` > 1: the share of the samples with a verdict that gave the hook's.
    agreement: float | None = None
    #: A hook with a ``calibration:`` block: its status (anything but ``ok`` made it shadow).
    calibration: HookCalibration | None = None

    def to_json(self) -> dict[str, Any]:
        """This hook's entry of the decision JSON (optional fields only when present)."""
        optional = ("mode", "cost_usd", "stages", "citations", "samples", "agreement", "calibration")
        omitted = {k for k in optional if getattr(self, k) is None}
        omitted |= {k for k in ("impossible", "deferred") if not getattr(self, k)}
        out = self.model_dump(by_alias=True, exclude=omitted)
        if self.calibration is not None:
            out["calibration"] = self.calibration.to_json()
        if self.stages is not None:
            out["stages"] = [
                stage.model_dump(
                    by_alias=True, exclude={k for k in ("samples", "agreement") if getattr(stage, k) is None}
                )
                for stage in self.stages
            ]
        return out

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
    #: Stop and SubagentStop: how the stop ended (None on tool events).
    outcome: StopOutcome | None = None
    #: problems beside the decision that the caller should show (say, an unwritable audit log)
    notes: list[str] = Field(default_factory=list, exclude=True)
    #: Stop sent back: what the gate keeps of this rejection to notice a stalled loop
    stop_memory: StopMemory | None = Field(None, exclude=True)

    def to_json(self) -> dict[str, Any]:
        """The decision JSON (optional fields only when present)."""
        out: dict[str, Any] = {
            "decision": self.decision,
            "reason": self.reason,
            "forcedStop": self.forced_stop,
            "rejectionCount": self.rejection_count,
        }
        if self.outcome is not None:
            out["outcome"] = self.outcome
        if self.additional_context is not None:
            out["hookSpecificOutput"] = {
                "hookEventName": self.event,
                "additionalContext": self.additional_context,
            }
        if self.updated_input is not None:
            out["updatedInput"] = self.updated_input
        out["hooks"] = [h.to_json() for h in self.hooks]
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
