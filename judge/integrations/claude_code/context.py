"""Claude Code's hook input → judge's hook context, and the transcript it points at.

* The JSONL session log is rendered by
  :func:`judge.transcripts.render_cache.rendered_transcript`.
* :func:`build_context` maps the input fields; ``PostToolUseFailure`` becomes a PostToolUse
  context with ``tool_succeeded: false`` and the error as the result.
* A SubagentStop of Claude Code before 2.0.42 carries neither ``last_assistant_message``
  nor ``agent_transcript_path``: the subagent's answer is then read from the sidechain
  lines of the session transcript (:func:`subagent_final_text`); when it cannot be found,
  :class:`SubagentOutputMissing` is raised — the main agent's text is never judged in its
  place.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from judge.config import STOP_EVENTS
from judge.files import load_json, open_regular, text_lines
from judge.integrations.claude_code.protocol import ClaudeCodeInput


class SubagentOutputMissing(Exception):
    """A SubagentStop whose subagent output cannot be found anywhere."""


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return "\n".join(p for p in parts if isinstance(p, str) and p.strip())


#: Longest line of a session log read whole (longer ones come in pieces, none of them JSON).
_MAX_LINE_BYTES = 16 << 20


def subagent_final_text(jsonl: Path, agent_id: str | None) -> str | None:
    """The last assistant text of a subagent, from the sidechain lines of a session log.

    With ``agent_id``, lines naming another agent are skipped. ``None`` when the log holds
    no subagent answer (or cannot be read).
    """
    last_id: object = None
    last_text = ""
    try:
        with open_regular(jsonl, "transcript") as handle:
            for raw in text_lines(handle, _MAX_LINE_BYTES):
                try:
                    obj = load_json(raw)
                except ValueError:  # not JSON, or nested too deeply
                    continue
                if not isinstance(obj, dict) or obj.get("type") != "assistant" or not obj.get("isSidechain"):
                    continue
                line_agent = obj.get("agentId")
                if agent_id and line_agent and line_agent != agent_id:
                    continue
                message = obj.get("message")
                if not isinstance(message, dict):
                    continue
                text = _text_of(message.get("content"))
                if not text.strip():
                    continue
                msg_id = message.get("id")
                if msg_id is not None and msg_id == last_id:
                    last_text = f"{last_text}\n{text}"
                else:
                    last_id, last_text = msg_id, text
    except OSError:
        return None
    return last_text or None


def session_key(hook_input: ClaudeCodeInput) -> str | None:
    """Where the Stop rejection count is kept: per session, per subagent for SubagentStop."""
    if not hook_input.session_id:
        return None
    if hook_input.hook_event_name == "SubagentStop":
        agent = hook_input.agent_id or hook_input.agent_type or "subagent"
        return f"{hook_input.session_id}:subagent:{agent}"
    return hook_input.session_id


def transcript_source(hook_input: ClaudeCodeInput) -> Path | None:
    """The JSONL to render: a subagent's own transcript for SubagentStop when given."""
    raw = hook_input.transcript_path
    if hook_input.hook_event_name == "SubagentStop" and hook_input.agent_transcript_path:
        raw = hook_input.agent_transcript_path
    return Path(raw).expanduser() if raw else None


def _final_output(hook_input: ClaudeCodeInput, last_text: str | None) -> str:
    """The answer a Stop/SubagentStop is about (raises :class:`SubagentOutputMissing`)."""
    # last_assistant_message first: the transcript file can lag behind the hook.
    if hook_input.last_assistant_message is not None:
        return hook_input.last_assistant_message
    if hook_input.hook_event_name != "SubagentStop" or hook_input.agent_transcript_path:
        return last_text or ""
    # Claude Code before 2.0.42: the subagent's lines are sidechain lines of the session log.
    source = Path(hook_input.transcript_path).expanduser() if hook_input.transcript_path else None
    found = subagent_final_text(source, hook_input.agent_id) if source is not None else None
    if found is None:
        raise SubagentOutputMissing(
            "cannot find the subagent's answer: Claude Code sent neither last_assistant_message "
            "nor agent_transcript_path (Claude Code before 2.0.42), and the session transcript "
            "holds no subagent (sidechain) message"
        )
    return found


#: Most background tasks or crons passed on, and most characters of each of their strings.
MAX_LISTED = 20
MAX_LISTED_CHARS = 300


def _clipped(value: Any, depth: int = 0) -> Any:
    """``value`` with long strings cut, long lists and objects shortened and deep nesting
    flattened to text (the hook input is not ours to trust in size)."""
    if isinstance(value, dict | list) and depth >= 4:
        value = json.dumps(value)
    if isinstance(value, str):
        return value if len(value) <= MAX_LISTED_CHARS else value[:MAX_LISTED_CHARS] + "..."
    if isinstance(value, dict):
        items = list(value.items())[:MAX_LISTED]
        return {str(k)[:MAX_LISTED_CHARS]: _clipped(v, depth + 1) for k, v in items}
    if isinstance(value, list):
        return [_clipped(v, depth + 1) for v in value[:MAX_LISTED]]
    return value


def _listed(value: Any) -> list[Any]:
    """A list field of the hook input, bounded; nothing for anything else."""
    return _clipped(value) if isinstance(value, list) else []


def build_context(
    hook_input: ClaudeCodeInput, transcript: Path | None, last_text: str | None
) -> dict[str, Any]:
    """The hook context for this hook input (``hook_event_name`` is the judge event)."""
    event = hook_input.config_event
    ctx: dict[str, Any] = {"hook_event_name": event}
    present = {
        "agent_name": hook_input.agent_type,
        "session_id": hook_input.session_id,
        "execution_summary": str(transcript) if transcript is not None else None,
        "cwd": hook_input.cwd,
        "permission_mode": hook_input.permission_mode,
        "agent_id": hook_input.agent_id,  # a subagent's stop or tool call
    }
    ctx.update({name: value for name, value in present.items() if value})
    if event in STOP_EVENTS:
        ctx["final_output"] = _final_output(hook_input, last_text)
        for name in ("background_tasks", "session_crons"):
            listed = _listed(getattr(hook_input, name))
            if listed:
                ctx[name] = listed
    else:
        ctx.update(_tool_fields(hook_input))
    return ctx


def _tool_fields(hook_input: ClaudeCodeInput) -> dict[str, Any]:
    """A tool event's part of the context: the call, and its result after it ran."""
    ctx: dict[str, Any] = {
        "tool_name": hook_input.tool_name,
        "tool_input": hook_input.tool_input if hook_input.tool_input is not None else {},
    }
    if hook_input.tool_use_id:
        ctx["tool_use_id"] = hook_input.tool_use_id
    if isinstance(hook_input.mcp_server, dict) and hook_input.mcp_server:
        ctx["mcp_server"] = _clipped(hook_input.mcp_server)
    if isinstance(hook_input.duration_ms, int | float) and not isinstance(hook_input.duration_ms, bool):
        ctx["duration_ms"] = hook_input.duration_ms
    for name in ("command_name", "command_source", "invoked_by"):  # a skill's shell command
        value = getattr(hook_input, name)
        if isinstance(value, str) and value:
            ctx[name] = _clipped(value)
    if hook_input.hook_event_name == "PostToolUse":
        ctx["tool_result"] = hook_input.tool_response
        ctx["tool_succeeded"] = True
    elif hook_input.hook_event_name == "PostToolUseFailure":
        ctx["tool_result"] = hook_input.error
        ctx["tool_succeeded"] = False
        ctx["tool_error"] = hook_input.error
        if hook_input.is_interrupt is not None:
            ctx["is_interrupt"] = hook_input.is_interrupt
    return ctx


def probe_context(hook_input: ClaudeCodeInput) -> dict[str, Any]:
    """Enough of the context to select hooks (no transcript work, never raises)."""
    ctx: dict[str, Any] = {"hook_event_name": hook_input.config_event}
    if hook_input.agent_type:
        ctx["agent_name"] = hook_input.agent_type
    if hook_input.tool_name is not None:
        ctx["tool_name"] = hook_input.tool_name
    return ctx
