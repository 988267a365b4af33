"""Cursor's agent hook protocol (``judge cursor``), from Cursor's documentation (Cursor 2.x-3.x;
the Cursor agent cannot be installed or run here, so this dialect is tested with payloads
written from those documents, not against Cursor itself).

Where: ``~/.cursor/hooks.json`` (user) or a project's ``.cursor/hooks.json`` (trusted
workspaces): ``{"version": 1, "hooks": {"<event>": [{"command": ..., "timeout": s,
"matcher": ..., "failClosed": bool, "loop_limit": n}]}}`` - flat entries, no inner
``hooks`` list. With "Third-party skills" on, Cursor also runs Claude Code's hooks from
``.claude/settings*.json`` and ``~/.claude/settings.json`` (see :mod:`.foreign`).

Events judge serves: ``stop`` (judged as Stop), ``subagentStop`` (SubagentStop),
``preToolUse`` (PreToolUse; tool names ``Shell``, ``Read``, ``Write``, ``Task``,
``MCP:<name>``), ``postToolUse`` and ``postToolUseFailure`` (PostToolUse).

Input: ``conversation_id`` (the session), ``generation_id``, ``hook_event_name``,
``model``, ``cursor_version``, ``workspace_roots``, ``transcript_path``; ``stop`` adds
``status`` (``completed``/``aborted``/``error``) and ``loop_count`` (follow-ups already sent)
and **no text of the answer** (judge reads the transcript); tool events ``tool_name``,
``tool_input``, ``tool_use_id``, ``cwd``, after the call ``tool_output`` (a JSON string).

Output (exit 0):

* stop: ``{"followup_message": R}`` - R is submitted as the next user message. Cursor
  caps follow-ups with the entry's ``loop_limit`` (default 5; ``null`` means none): the
  installer writes judge's own limit there. A stop whose status is not ``completed`` is
  not judged.
* preToolUse deny: ``{"permission": "deny", "user_message": R, "agent_message": R}`` (the
  model has been seen to receive either); a rewrite is ``updated_input``.
* postToolUse: ``{"additional_context": C}``. Cursor cannot replace a result (MCP aside),
  so a block reaches the model as additional context saying the result is withheld.
* Exit 2 denies; any other failure is fail-open unless the entry says ``failClosed:
  true`` - the installer sets it on preToolUse entries whose hooks fail closed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from judge.integrations.hosts.dialect import (
    Dialect,
    HostCall,
    HostInputError,
    Verdict,
    blocked_result_text,
    first_text,
    needs_tool,
    text,
)

CONFIG_EVENT: dict[str, str] = {
    "stop": "Stop",
    "subagentStop": "SubagentStop",
    "preToolUse": "PreToolUse",
    "postToolUse": "PostToolUse",
    "postToolUseFailure": "PostToolUse",
}
HOST_EVENTS: dict[str, tuple[str, ...]] = {
    "Stop": ("stop",),
    "SubagentStop": ("subagentStop",),
    "PreToolUse": ("preToolUse",),
    "PostToolUse": ("postToolUse", "postToolUseFailure"),
}
#: Cursor's follow-up limit per stop entry when the entry sets none.
DEFAULT_LOOP_LIMIT = 5


def _count(data: Mapping[str, Any], key: str, event: str | None) -> int:
    value = data.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise HostInputError(f"invalid hook input: {key} must be a count, got {value!r}", event)
    return value


class Cursor(Dialect):
    name: ClassVar[str] = "cursor"
    title: ClassVar[str] = "Cursor"
    block_cap: ClassVar[int | None] = DEFAULT_LOOP_LIMIT
    rewrites: ClassVar[bool] = True
    withholds: ClassVar[bool] = False
    transcript_format: ClassVar[str] = "jsonl"
    config_events: ClassVar[dict[str, str]] = CONFIG_EVENT

    host_events: ClassVar[dict[str, tuple[str, ...]]] = HOST_EVENTS
    flat: ClassVar[bool] = True
    preamble: ClassVar[dict[str, Any]] = {"version": 1}

    def settings_file(self, scope: str, project: Path, env: Mapping[str, str] = os.environ) -> Path:
        if scope == "project":
            return project / ".cursor" / "hooks.json"
        return Path(env.get("HOME") or Path.home()) / ".cursor" / "hooks.json"

    def handler(
        self, command: str, timeout: int, *, closed: bool = False, loops: int | None = None
    ) -> dict[str, Any]:
        entry: dict[str, Any] = {"command": command, "timeout": timeout}
        if closed:
            entry["failClosed"] = True
        if loops is not None:
            entry["loop_limit"] = loops
        return entry

    def parse(self, data: Mapping[str, Any], event: str | None = None) -> HostCall:
        host_event = text(data, "hook_event_name") or event
        if not host_event:
            raise HostInputError("invalid hook input: no hook_event_name (expected Cursor's hook JSON)")
        judged = CONFIG_EVENT.get(host_event)
        loops = _count(data, "loop_count", judged)
        roots = data.get("workspace_roots")
        root = roots[0] if isinstance(roots, list) and roots and isinstance(roots[0], str) else None
        call = HostCall(
            host_event=host_event,
            event=judged,
            session_id=first_text(data, "conversation_id", "session_id", event=judged),
            cwd=text(data, "cwd", event=judged) or root,
            transcript_path=text(data, "transcript_path", event=judged),
            stop_hook_active=loops > 0,
            new_loop=loops == 0,
            model=text(data, "model", event=judged),
            tool_name=text(data, "tool_name", event=judged),
            tool_input=data.get("tool_input"),
            tool_use_id=text(data, "tool_use_id", event=judged),
            agent_type=first_text(data, "subagent_type", "agent_type", event=judged),
        )
        status = text(data, "status", event=judged)
        if judged in ("Stop", "SubagentStop") and status not in (None, "completed"):
            call.skip = f"the agent's run ended with status {status!r}; judge only judges completed runs"
        if host_event == "postToolUseFailure":
            call.tool_succeeded = False
            call.tool_error = call.tool_result = first_text(data, "error_message", "error", event=judged)
        elif judged == "PostToolUse":
            call.tool_result = data.get("tool_output")
        return needs_tool(call)

    def render(self, call: HostCall, verdict: Verdict) -> dict[str, Any] | None:
        judged = call.event
        if judged in ("Stop", "SubagentStop"):
            return {"followup_message": verdict.block} if verdict.block is not None else None
        if judged == "PreToolUse":
            if verdict.block is not None:
                return {"permission": "deny", "user_message": verdict.block, "agent_message": verdict.block}
            out: dict[str, Any] = {}
            if verdict.updated_input is not None:
                out = {"updated_input": verdict.updated_input}  # no permission: Cursor's own applies
            if verdict.additional_context is not None:
                out["additional_context"] = verdict.additional_context
            return out or None
        extra = verdict.additional_context
        if verdict.block is not None:  # Cursor cannot replace a result: the model is told
            withheld = blocked_result_text(f"{verdict.block} (do not use this tool result)")
            extra = f"{withheld}\n{extra}" if extra else withheld
        return {"additional_context": extra} if extra is not None else None


DIALECT = Cursor()
