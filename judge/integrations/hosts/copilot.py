"""GitHub Copilot CLI's hook protocol (``judge copilot``), as of Copilot CLI 1.0.102.

Where: ``*.json`` files in ``$COPILOT_HOME/hooks/`` (default ``~/.copilot/hooks/``; no trust
step) or a repository's ``.github/hooks/`` (trusted folders only); judge writes its own
file, ``judge.json``. Copilot also runs the hooks of a repository's
``.claude/settings.json`` and ``.claude/settings.local.json`` (see :mod:`.foreign`).

Copilot has two input forms, chosen by how an event is spelled in the configuration:

* **VS Code compatible** (PascalCase events: ``Stop``, ``SubagentStop``, ``PreToolUse``,
  ``PostToolUse``, ``PostToolUseFailure``; Claude-style matcher groups, ``timeout`` in
  seconds): snake_case input with ``hook_event_name``, and **Claude Code's tool names**
  (``bash`` -> ``Bash``, ``create`` -> ``Write``, ``edit`` -> ``Edit``, ``view`` -> ``Read``,
  ``grep``/``glob``/``web_fetch``/``task`` -> ``Grep``/``Glob``/``WebFetch``/``Agent``) and
  Claude's matcher rules. The installer writes this form, so a judge configuration written
  for Claude Code matches the same tools here.
* **native** (camelCase events: ``agentStop``, ``subagentStop``, ``preToolUse``,
  ``postToolUse``, ``postToolUseFailure``): camelCase input **without the event's name**
  (``judge copilot --event NAME`` tells it) and Copilot's own tool names.

Input: ``session_id``/``sessionId``, ``cwd``, ``timestamp``; Stop adds ``transcript_path``
(the session's ``events.jsonl``), ``stop_reason`` and ``stop_hook_active`` - and **no text of
the answer**: judge reads the last ``assistant.message`` of ``events.jsonl``. SubagentStop
carries the subagent's answer (``last_assistant_message`` / ``response``), ``agent_type``,
``agent_id``. Tool events: ``tool_name``/``toolName``, ``tool_input``/``toolArgs``; after the
call ``tool_result``/``toolResult`` (``{result_type, text_result_for_llm}``); a failed call
``error``.

Output (exit 0):

* Stop / SubagentStop: ``{"decision": "block", "reason": R}`` - R is queued as the next
  prompt. **Copilot ends the turn after 8 blocks in a row** (a ``maxRejections`` above 9
  never takes effect there). Exit 2 does not block a stop.
* PreToolUse deny: ``permissionDecision: "deny"`` with ``permissionDecisionReason`` (the
  VS Code form also as Claude's ``hookSpecificOutput``); a rewrite is ``modifiedArgs``; a
  hook that asks for confirmation is ``permissionDecision: "ask"`` (``copilot -p`` cannot
  ask, and denies).
  A crashing hook **denies** the call (fail closed) but exit 2 loses the reason, so judge
  denies in JSON; a hook that times out lets the call run (fail open) - judge's own
  ``--timeout``, below Copilot's, answers first.
* PostToolUse: ``modifiedResult`` (``{resultType: "success", textResultForLlm}``) replaces
  the result; ``additionalContext`` is appended to it. A failed call's result cannot be
  replaced: a block there reaches the model as ``additionalContext``.
* Copilot shows no ``systemMessage``: notes for the user go to stderr.
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
    flag,
    needs_tool,
    text,
)

#: VS Code compatible (PascalCase) and native (camelCase) event -> judge configuration event.
CONFIG_EVENT: dict[str, str] = {
    "Stop": "Stop",
    "SubagentStop": "SubagentStop",
    "PreToolUse": "PreToolUse",
    "PostToolUse": "PostToolUse",
    "PostToolUseFailure": "PostToolUse",
    "agentStop": "Stop",
    "subagentStop": "SubagentStop",
    "preToolUse": "PreToolUse",
    "postToolUse": "PostToolUse",
    "postToolUseFailure": "PostToolUse",
}
#: judge configuration event -> the (VS Code compatible) events the installer registers.
HOST_EVENTS: dict[str, tuple[str, ...]] = {
    "Stop": ("Stop",),
    "SubagentStop": ("SubagentStop",),
    "PreToolUse": ("PreToolUse",),
    "PostToolUse": ("PostToolUse", "PostToolUseFailure"),
}
#: Copilot ends the turn after this many consecutive Stop blocks ("runaway guard").
COPILOT_BLOCK_CAP = 8
#: Copilot's default hook timeout (seconds).
DEFAULT_TIMEOUT = 30
_FAILURE_EVENTS = ("PostToolUseFailure", "postToolUseFailure")
ASK_REASON = "a judge hook asks you to confirm this call"
#: The file judge writes its hooks to (one file per tool is Copilot's idiom).
HOOKS_FILE = "judge.json"


def copilot_home(env: Mapping[str, str] = os.environ) -> Path:
    """``$COPILOT_HOME``, else ``~/.copilot``."""
    raw = env.get("COPILOT_HOME")
    return Path(raw).expanduser() if raw else Path(env.get("HOME") or Path.home()) / ".copilot"


def _native_event(data: Mapping[str, Any]) -> str | None:
    """The camelCase event an input without ``--event`` is for, from its fields."""
    if "toolName" in data:
        if "toolResult" in data:
            return "postToolUse"
        return "postToolUseFailure" if "error" in data else "preToolUse"
    if "response" in data or "agentType" in data:
        return "subagentStop"
    if "stopReason" in data or "transcriptPath" in data:
        return "agentStop"
    return None


def _result(value: Any) -> Any:
    """The text the model saw of a tool result (``text_result_for_llm``), else the result."""
    if isinstance(value, dict):
        for key in ("text_result_for_llm", "textResultForLlm"):
            if isinstance(value.get(key), str):
                return value[key]
    return value


class Copilot(Dialect):
    name: ClassVar[str] = "copilot"
    title: ClassVar[str] = "Copilot CLI"
    block_cap: ClassVar[int | None] = COPILOT_BLOCK_CAP
    rewrites: ClassVar[bool] = True
    asks: ClassVar[bool] = True
    transcript_format: ClassVar[str] = "copilot"
    config_events: ClassVar[dict[str, str]] = CONFIG_EVENT

    host_events: ClassVar[dict[str, tuple[str, ...]]] = HOST_EVENTS
    preamble: ClassVar[dict[str, Any]] = {"version": 1}

    def settings_file(self, scope: str, project: Path, env: Mapping[str, str] = os.environ) -> Path:
        if scope == "project":
            return project / ".github" / "hooks" / HOOKS_FILE
        return copilot_home(env) / "hooks" / HOOKS_FILE

    def host_event_of(self, data: Mapping[str, Any], event: str | None = None) -> str | None:
        return super().host_event_of(data, event) or _native_event(data)

    def parse(self, data: Mapping[str, Any], event: str | None = None) -> HostCall:
        named = text(data, "hook_event_name")
        shape = "claude" if named else "native"
        host_event = named or event or _native_event(data)
        if not host_event:
            raise HostInputError(
                "invalid hook input: no hook_event_name, and no --event saying which Copilot event it is"
            )
        judged = CONFIG_EVENT.get(host_event)
        active = flag(data, "stop_hook_active", event=judged)
        call = HostCall(
            host_event=host_event,
            event=judged,
            shape=shape,
            session_id=first_text(data, "session_id", "sessionId", event=judged),
            cwd=text(data, "cwd", event=judged),
            transcript_path=first_text(data, "transcript_path", "transcriptPath", event=judged),
            final_output=first_text(data, "last_assistant_message", "response", event=judged),
            stop_hook_active=active,
            new_loop=not active,
            tool_name=first_text(data, "tool_name", "toolName", event=judged),
            tool_input=data.get("tool_input", data.get("toolArgs")),
            agent_type=first_text(data, "agent_type", "agentType", event=judged),
            agent_id=first_text(data, "agent_id", "agentId", event=judged),
        )
        reason = first_text(data, "stop_reason", "stopReason", event=judged)
        if reason:
            call.extra["stop_reason"] = reason
        if host_event in _FAILURE_EVENTS:
            call.tool_succeeded, call.tool_error = False, data.get("error")
            call.tool_result = call.tool_error
        elif judged == "PostToolUse":
            call.tool_result = _result(data.get("tool_result", data.get("toolResult")))
        return needs_tool(call)

    def render(self, call: HostCall, verdict: Verdict) -> dict[str, Any] | None:
        judged = call.event
        if judged in ("Stop", "SubagentStop"):
            return {"decision": "block", "reason": verdict.block} if verdict.block is not None else None
        if judged == "PreToolUse":
            return _pre_tool_use(call, verdict) or None
        out: dict[str, Any] = {}
        extra = verdict.additional_context
        if verdict.block is not None:
            withheld = blocked_result_text(verdict.block)
            if call.host_event in _FAILURE_EVENTS:  # a failed call's result cannot be replaced
                extra = f"{withheld}\n{extra}" if extra else withheld
            else:
                out["modifiedResult"] = {"resultType": "success", "textResultForLlm": withheld}
        if extra is not None:
            out["additionalContext"] = extra
        return out or None


def _pre_tool_use(call: HostCall, verdict: Verdict) -> dict[str, Any]:
    out: dict[str, Any] = {}
    specific: dict[str, Any] = {"hookEventName": "PreToolUse"}
    if verdict.block is not None:
        out = {"permissionDecision": "deny", "permissionDecisionReason": verdict.block}
        specific.update(permissionDecision="deny", permissionDecisionReason=verdict.block)
    elif verdict.ask is not None:  # the user confirms (a prompt run, which cannot, denies)
        out = {"permissionDecision": "ask", "permissionDecisionReason": verdict.ask or ASK_REASON}
        specific.update(permissionDecision="ask", permissionDecisionReason=verdict.ask or ASK_REASON)
    if verdict.updated_input is not None and verdict.block is None:
        out["modifiedArgs"] = verdict.updated_input
    if verdict.additional_context is not None:
        out["additionalContext"] = verdict.additional_context
    if call.shape == "claude" and len(specific) > 1:
        out["hookSpecificOutput"] = specific
    return out


DIALECT = Copilot()
