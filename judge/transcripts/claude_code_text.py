"""Text helpers of the Claude Code transcript renderer: plain text of content blocks,
long lines and long blocks cut with a note, labelled multi-line entries, and the reason
in a hook's feedback that Claude Code relays to the agent as a user turn, and ``system``
rows (compactions, API errors, Stop-hook summaries)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

#: Longest rendered line; longer ones are cut with a note.
MAX_LINE_CHARS = 2000

#: Attachment kinds that carry nothing a judge needs (listings, snapshots, reminders).
NOISE_ATTACHMENTS = frozenset(
    {
        "skill_listing",
        "prompt_snapshot",
        "file_snapshot",
        "dynamic_skill",
        "invoked_skills",
        "todo_reminder",
        "critical_system_reminder",
        "deferred_tools_delta",
        "hook_success",
        "hook_cancelled",
        "plan_mode",
        "plan_mode_reentry",
        "environment",
        "model",
        "agent_listing_delta",
        "session_context",
        "date",
        "remote_session_change",
    }
)


def clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [+{len(text) - limit} chars]"


def one_line(text: str, limit: int) -> str:
    return clip(" ".join(text.split()), limit)


def block_text(content: Any) -> str:
    """Plain text of a message/tool-result content (a string or a list of blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                if block.get("type") == "text" and isinstance(block.get("text"), str):
                    parts.append(block["text"])
                elif block.get("type") == "image":
                    parts.append("[image]")
                elif block.get("type"):
                    parts.append(f"[{block['type']}]")
            elif isinstance(block, str):
                parts.append(block)
        return "\n".join(parts)
    if content is None:
        return ""
    return json.dumps(content, ensure_ascii=False)


def labelled(label: str, text: str, head: int | None = None, tail: int = 0) -> Iterator[str]:
    """``label: first line`` then the remaining lines indented, each cut to MAX_LINE_CHARS.

    With ``head``, a text longer than ``head + tail`` lines keeps its first ``head`` and
    last ``tail`` lines, with a note of how many were cut between them.
    """
    lines = text.rstrip("\n").split("\n") if text.strip() else [""]
    last: list[str] = []
    cut = 0
    if head is not None and len(lines) > head + tail:
        cut = len(lines) - head - tail
        last = lines[len(lines) - tail :] if tail else []
        lines = lines[:head]
    yield clip(f"{label}: {lines[0]}", MAX_LINE_CHARS)
    for line in lines[1:]:
        yield clip(f"    {line}", MAX_LINE_CHARS)
    if cut:
        yield f"    [... {cut} lines omitted ...]"
    for line in last:
        yield clip(f"    {line}", MAX_LINE_CHARS)


_FEEDBACK_LEAD = re.compile(r"\A\s*[\w:-]+ hook feedback:\s*\n")


def hook_feedback(obj: dict[str, Any], content: Any) -> str | None:
    """The reason of a hook's feedback relayed to the agent as a meta user turn (Claude Code
    marks those ``rowSource: "hook"``; the text starts ``Stop hook feedback:``), else None."""
    text = block_text(content)
    lead = _FEEDBACK_LEAD.match(text)
    if obj.get("rowSource") != "hook" and not (obj.get("isMeta") and lead):
        return None
    return (text[lead.end() :] if lead else text).strip()


def user_label(obj: dict[str, Any], prefix: str) -> str:
    """Who a user row is from: the user, or what Claude Code put in the user's place (a
    background task's notification, a subagent's task from its parent agent, ...)."""
    origin = obj.get("origin")
    kind = origin.get("kind") if isinstance(origin, dict) else None
    if isinstance(kind, str) and kind and kind != "human":
        what = " ".join(kind.replace("-", " ").replace("_", " ").split()).upper()[:40]
        return f"{prefix}{what} (from Claude Code, not the user)"
    if obj.get("isSidechain") and obj.get("rowSource") == "recorded":
        return f"{prefix}TASK FROM THE PARENT AGENT"
    return f"{prefix}USER (meta)" if obj.get("isMeta") else f"{prefix}USER"


def system_lines(obj: dict[str, Any], prefix: str) -> list[str]:
    """A ``system`` row: compactions, API errors, Stop-hook summaries, turn times."""
    subtype = obj.get("subtype") or "message"
    label = f"{prefix}SYSTEM ({subtype})"
    if subtype == "compact_boundary":
        meta = obj.get("compactMetadata") or {}
        trigger = meta.get("trigger", "?") if isinstance(meta, dict) else "?"
        tokens = meta.get("preTokens") if isinstance(meta, dict) else None
        detail = f" ({trigger}, {tokens} tokens before)" if tokens else f" ({trigger})"
        return [f"{label}: conversation compacted{detail}"]
    if subtype == "api_error":
        error = obj.get("error") or obj.get("cause") or {}
        cause = error.get("cause", error) if isinstance(error, dict) else error
        code = cause.get("code") if isinstance(cause, dict) else cause
        attempt = obj.get("retryAttempt")
        retries = f" (retry {attempt}/{obj.get('maxRetries')})" if attempt else ""
        return [clip(f"{label}: API error {code}{retries}", MAX_LINE_CHARS)]
    if subtype == "stop_hook_summary":
        count = obj.get("hookCount", 0)
        prevented = "yes" if obj.get("preventedContinuation") else "no"
        errors = obj.get("hookErrors") or []
        failed = obj.get("failedHookErrorIndexes")
        outcome = f"errors: {len(errors)}"
        if isinstance(failed, list) and isinstance(errors, list):
            # (newer releases: the other entries of hookErrors are blocking reasons)
            failures = len({i for i in failed if isinstance(i, int) and 0 <= i < len(errors)})
            outcome = f"blocked: {len(errors) - failures}, failed: {failures}"
        reason = f", reason: {obj['stopReason']}" if obj.get("stopReason") else ""
        summary = f"{count} Stop hook(s) ran, prevented continuation: {prevented}, {outcome}{reason}"
        return [clip(f"{label}: {summary}", MAX_LINE_CHARS)]
    if subtype == "turn_duration":
        ms = obj.get("durationMs")
        return [f"{label}: turn took {ms / 1000:.1f} s"] if isinstance(ms, (int, float)) else []
    content = obj.get("content")
    return list(labelled(label, block_text(content))) if content else [f"{label}"]
