"""Append-only JSONL logs: ``audit_log.jsonl`` (PostToolUse) and ``session_summaries.jsonl`` (Stop).

Each record is one line written with a single ``write`` on an ``O_APPEND`` descriptor
under an exclusive ``flock``, so concurrent writers never interleave and a crash
never leaves half a line.
"""

from __future__ import annotations

import fcntl
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from judge.decision import Decision

AUDIT_LOG = "audit_log.jsonl"
SESSION_SUMMARIES = "session_summaries.jsonl"


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def append_jsonl(path: Path, record: dict[str, Any]) -> None:
    """Append one JSON line atomically (one write, under a lock)."""
    line = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode("utf-8", errors="replace")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            written = 0
            while written < len(line):
                written += os.write(fd, line[written:])
            os.fsync(fd)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


class AuditLog:
    """The two logs in ``data_dir``."""

    def __init__(self, data_dir: str | Path) -> None:
        self.data_dir = Path(data_dir)

    def record(self, event: str, context: dict[str, Any], decision: Decision) -> None:
        """Log what ``decision`` says about ``context`` where the event calls for it."""
        if event == "PostToolUse":
            self.tool_call(context, decision)
        elif event in ("Stop", "SubagentStop"):
            self.session_summary(context, decision)

    def tool_call(self, context: dict[str, Any], decision: Decision) -> None:
        append_jsonl(
            self.data_dir / AUDIT_LOG,
            {
                "timestamp": now_iso(),
                "session_id": context.get("session_id"),
                "agent_name": context.get("agent_name"),
                "tool_name": context.get("tool_name"),
                "tool_input": context.get("tool_input"),
                "tool_result": context.get("tool_result"),
                "is_error": not bool(context.get("tool_succeeded", True)),
                "decision": decision.decision,
                "reason": decision.reason,
                "hook_errors": [h.error for h in decision.hooks if h.error],
            },
        )

    def session_summary(self, context: dict[str, Any], decision: Decision) -> None:
        usage = [h.usage for h in decision.hooks if h.usage is not None]
        append_jsonl(
            self.data_dir / SESSION_SUMMARIES,
            {
                "timestamp": now_iso(),
                "event": decision.event,
                "session_id": context.get("session_id"),
                "agent_name": context.get("agent_name"),
                "current_turn": context.get("current_turn"),
                "decision": decision.decision,
                "reason": decision.reason,
                "forcedStop": decision.forced_stop,
                "rejectionCount": decision.rejection_count,
                "final_output_chars": len(str(context.get("final_output") or "")),
                "hooks": len(decision.hooks),
                "hook_errors": [h.error for h in decision.hooks if h.error],
                "inputTokens": sum(u.input_tokens for u in usage),
                "outputTokens": sum(u.output_tokens for u in usage),
            },
        )
