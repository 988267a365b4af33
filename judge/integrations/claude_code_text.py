"""Text helpers of the Claude Code transcript renderer: plain text of content blocks,
long lines and long blocks cut with a note, labelled multi-line entries, and the reason
in a hook's feedback that Claude Code relays to the agent as a user turn."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

#: Longest rendered line; longer ones are cut with a note.
MAX_LINE_CHARS = 2000


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
