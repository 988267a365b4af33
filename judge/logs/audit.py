"""The audit logs: ``audit_log.jsonl`` (PostToolUse), ``session_summaries.jsonl`` (Stop)
and ``shadow_log.jsonl`` (what shadow hooks would have decided), as JSONL files
(:mod:`judge.logs.jsonl`) or as rows of the service's log table (:mod:`judge.logs.table`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from judge.decision import Decision
from judge.files import open_regular
from judge.logs.jsonl import append_jsonl, now_iso, read_jsonl
from judge.logs.table import LogTable, iter_log

_log = logging.getLogger("judge.audit")

AUDIT_LOG = "audit_log.jsonl"
SESSION_SUMMARIES = "session_summaries.jsonl"
#: What shadow hooks would have decided, with the context they judged (an eval suite's source).
SHADOW_LOG = "shadow_log.jsonl"
#: Characters of transcript text kept with a shadow record.
SHADOW_TRANSCRIPT_CHARS = 1_000_000


def shadow_fields(decision: Decision) -> dict[str, Any]:
    """``{"shadow": [...]}``: what each shadow hook would have decided (nothing without any)."""
    shadow = [
        {
            "hook": f"{h.level}[{h.index}]",
            "type": h.type,
            "decision": h.decision,
            "reason": h.reason,
            "error": h.error,
        }
        for h in decision.hooks
        if h.mode == "shadow"
    ]
    return {"shadow": shadow} if shadow else {}


def calibration_fields(decision: Decision) -> dict[str, Any]:
    """``{"calibration": [...]}``: each calibrated hook's status and why (anything but ``ok``
    ran it as shadow); nothing without a calibrated hook."""
    found = [
        {"hook": f"{h.level}[{h.index}]", **h.calibration.to_json()}
        for h in decision.hooks
        if h.calibration is not None
    ]
    return {"calibration": found} if found else {}


def cascade_fields(decision: Decision) -> dict[str, Any]:
    """``{"cascades": [...]}``: each cascade hook's stages (model, verdict, duration, tokens,
    cost, agreement); nothing without a cascade."""
    cascades = [
        {"hook": f"{h.level}[{h.index}]", "stages": [s.model_dump(by_alias=True) for s in h.stages]}
        for h in decision.hooks
        if h.stages
    ]
    return {"cascades": cascades} if cascades else {}


_BOOL: TypeAdapter[bool] = TypeAdapter(bool)


def _succeeded(value: Any) -> bool:
    """``tool_succeeded`` as the hooks saw it: read as the context model reads it
    (``"false"``, ``"no"`` and ``0`` are false), not by Python truthiness."""
    try:
        return _BOOL.validate_python(value)
    except ValidationError:
        return bool(value)


class AuditLog:
    """The logs in ``data_dir`` as JSONL files, or, given a ``table``, in the state database
    (:mod:`judge.logs.table`): the same records either way."""

    def __init__(self, data_dir: str | Path, table: LogTable | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.table = table

    def _append(self, name: str, record: dict[str, Any]) -> None:
        if self.table is not None:
            self.table.append_log(name.removesuffix(".jsonl"), record)
        else:
            append_jsonl(self.data_dir / name, record)

    def _read(self, name: str) -> Iterator[dict[str, Any]]:
        if self.table is not None:
            return (record for _, record in iter_log(self.table, name.removesuffix(".jsonl")))
        return read_jsonl(self.data_dir / name)

    def tool_calls(self) -> Iterator[dict[str, Any]]:
        """The records of ``audit_log.jsonl`` (see :func:`read_jsonl`)."""
        return self._read(AUDIT_LOG)

    def session_summaries(self) -> Iterator[dict[str, Any]]:
        """The records of ``session_summaries.jsonl`` (see :func:`read_jsonl`)."""
        return self._read(SESSION_SUMMARIES)

    def record(
        self, event: str, context: dict[str, Any], decision: Decision, transcript: str | Path | None = None
    ) -> None:
        """Log what ``decision`` says about ``context`` where the event calls for it
        (``transcript``: the file judged when the context names none)."""
        if event == "PostToolUse":
            self.tool_call(context, decision)
        elif event in ("Stop", "SubagentStop"):
            self.session_summary(context, decision)
        if any(h.mode == "shadow" for h in decision.hooks):
            self.shadow(event, context, decision, transcript)

    def shadow(
        self,
        event: str,
        context: dict[str, Any],
        decision: Decision,
        transcript_file: str | Path | None = None,
    ) -> None:
        """Record what the shadow hooks would have decided, with what they judged: the context
        and the transcript text (its first SHADOW_TRANSCRIPT_CHARS characters), so the
        records can become an eval suite (``judge datasets convert shadow``)."""
        judged = {k: v for k, v in context.items() if k not in ("execution_summary", "stop_rejection_count")}
        transcript = None
        summary = context.get("execution_summary") or (str(transcript_file) if transcript_file else None)
        if isinstance(summary, str) and summary:
            try:  # a regular file only (a FIFO must not hang the gate); its first characters
                with open_regular(summary, "transcript") as src:
                    transcript = src.read(4 * SHADOW_TRANSCRIPT_CHARS).decode("utf-8", errors="replace")
                transcript = transcript[:SHADOW_TRANSCRIPT_CHARS]
            except OSError:
                transcript = None
        self._append(
            SHADOW_LOG,
            {
                "timestamp": now_iso(),
                "event": event,
                "session_id": context.get("session_id"),
                "agent_name": context.get("agent_name"),
                "decision": decision.decision,
                **({"outcome": decision.outcome} if decision.outcome is not None else {}),
                "context": judged,
                "transcript": transcript,
                **shadow_fields(decision),
                **calibration_fields(decision),
                **cascade_fields(decision),
            },
        )

    def tool_call(self, context: dict[str, Any], decision: Decision) -> None:
        """One line of ``audit_log.jsonl`` for a finished tool call."""
        self._append(
            AUDIT_LOG,
            {
                "timestamp": now_iso(),
                "session_id": context.get("session_id"),
                "agent_name": context.get("agent_name"),
                "tool_name": context.get("tool_name"),
                "tool_input": context.get("tool_input"),
                "tool_result": context.get("tool_result"),
                "is_error": not _succeeded(context.get("tool_succeeded", True)),
                "decision": decision.decision,
                "reason": decision.reason,
                "hook_errors": [h.error for h in decision.hooks if h.error],
                **shadow_fields(decision),
                **calibration_fields(decision),
                **cascade_fields(decision),
            },
        )

    def session_summary(self, context: dict[str, Any], decision: Decision) -> None:
        usage = [h.usage for h in decision.hooks if h.usage is not None]
        self._append(
            SESSION_SUMMARIES,
            {
                "timestamp": now_iso(),
                "event": decision.event,
                "session_id": context.get("session_id"),
                "agent_name": context.get("agent_name"),
                "current_turn": context.get("current_turn"),
                "decision": decision.decision,
                "reason": decision.reason,
                "forcedStop": decision.forced_stop,
                "outcome": decision.outcome,
                "rejectionCount": decision.rejection_count,
                "final_output_chars": len(str(context.get("final_output") or "")),
                "hooks": len(decision.hooks),
                "hook_errors": [h.error for h in decision.hooks if h.error],
                "inputTokens": sum(u.input_tokens for u in usage),
                "outputTokens": sum(u.output_tokens for u in usage),
                **shadow_fields(decision),
                **calibration_fields(decision),
                **cascade_fields(decision),
            },
        )
