"""OpenAI Codex CLI's hook protocol (``judge codex``), as of Codex CLI 0.171.

Where: ``$CODEX_HOME/hooks.json`` (default ``~/.codex/hooks.json``; a project's
``.codex/hooks.json`` when Codex trusts the project), Claude-style matcher groups,
``timeout`` in seconds (default 600). A hook that is not managed by an administrator runs
only when ``config.toml`` holds a trust record for it (:mod:`.trust`); without one Codex
skips it without a word.

Events judge serves: ``Stop`` and ``SubagentStop`` (judged as Stop / SubagentStop),
``PreToolUse``, ``PostToolUse`` (every tool call, failed or not). Shell calls reach hooks as
``tool_name: "Bash"`` with ``tool_input.command``; patches as ``apply_patch``; MCP tools as
``mcp__<server>__<tool>``.

Input: Claude-style snake_case - ``session_id``, ``transcript_path`` (the rollout JSONL),
``cwd``, ``hook_event_name``, ``model``, ``permission_mode``, ``turn_id``; Stop adds
``stop_hook_active`` and ``last_assistant_message``; SubagentStop adds ``agent_id``,
``agent_type``, ``agent_transcript_path``; tool events ``tool_name``, ``tool_input``,
``tool_use_id`` and, after the call, ``tool_response`` (a shell call's output string).

Output (exit 0; judge never relies on exit 2):

* Stop: ``{"decision": "block", "reason": R}`` - R reaches the model as a user message and
  the turn goes on. **Codex has no cap**: it honours any number of blocks in a row, so
  judge caps them itself (:data:`judge.integrations.hosts.evaluate.JUDGE_BLOCK_CAP`).
* PreToolUse deny: ``hookSpecificOutput.permissionDecision: "deny"`` with
  ``permissionDecisionReason``. Codex refuses (marks the hook failed and **runs the tool**)
  a bare ``"allow"``, ``"ask"`` and ``permissionDecisionReason`` without a decision, so judge
  prints nothing to allow; a rewrite needs ``"allow"`` with ``updatedInput``, which skips
  Codex's approval - only with ``--rewrite allow``, else judge denies and says what the
  policy would run instead.
* PostToolUse: ``{"decision": "block", "reason": R}`` replaces the output the model sees;
  ``hookSpecificOutput.additionalContext`` arrives as a developer message.
* ``systemMessage`` is shown to the user on every event.

Failures: a crashing hook, a timeout or unreadable output are **fail-open** on every event
(PreToolUse included): judge answers its own failures in JSON (a PreToolUse check that
cannot run is denied), but a judge that cannot start at all lets the call run.
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
    flag,
    joined,
    needs_tool,
    text,
)

#: Codex event -> the judge configuration event whose hooks judge it.
CONFIG_EVENT: dict[str, str] = {
    "Stop": "Stop",
    "SubagentStop": "SubagentStop",
    "PreToolUse": "PreToolUse",
    "PostToolUse": "PostToolUse",
}
#: judge configuration event -> the Codex events the installer registers for it.
HOST_EVENTS: dict[str, tuple[str, ...]] = {event: (event,) for event in CONFIG_EVENT}
#: Codex's default hook timeout (seconds).
DEFAULT_TIMEOUT = 600


def codex_home(env: Mapping[str, str] = os.environ) -> Path:
    """``$CODEX_HOME``, else ``~/.codex`` (made absolute, as Codex names its files)."""
    raw = env.get("CODEX_HOME")
    home = Path(raw).expanduser() if raw else Path(env.get("HOME") or Path.home()) / ".codex"
    return Path(os.path.abspath(home))


class Codex(Dialect):
    name: ClassVar[str] = "codex"
    title: ClassVar[str] = "Codex CLI"
    block_cap: ClassVar[int | None] = None
    rewrites: ClassVar[bool] = False
    transcript_format: ClassVar[str] = "codex"
    config_events: ClassVar[dict[str, str]] = CONFIG_EVENT

    host_events: ClassVar[dict[str, tuple[str, ...]]] = HOST_EVENTS

    def settings_file(self, scope: str, project: Path, env: Mapping[str, str] = os.environ) -> Path:
        if scope == "project":
            return project / ".codex" / "hooks.json"
        return codex_home(env) / "hooks.json"

    def parse(self, data: Mapping[str, Any], event: str | None = None) -> HostCall:
        host_event = text(data, "hook_event_name")
        if not host_event:
            raise HostInputError("invalid hook input: no hook_event_name (expected Codex's hook JSON)")
        judged = CONFIG_EVENT.get(host_event)
        active = flag(data, "stop_hook_active", event=judged)
        call = HostCall(
            host_event=host_event,
            event=judged,
            session_id=text(data, "session_id", event=judged),
            cwd=text(data, "cwd", event=judged),
            transcript_path=text(data, "transcript_path", event=judged),
            final_output=text(data, "last_assistant_message", event=judged),
            stop_hook_active=active,
            new_loop=not active,
            permission_mode=text(data, "permission_mode", event=judged),
            model=text(data, "model", event=judged),
            tool_name=text(data, "tool_name", event=judged),
            tool_input=data.get("tool_input"),
            tool_result=data.get("tool_response"),
            tool_use_id=text(data, "tool_use_id", event=judged),
            agent_type=text(data, "agent_type", event=judged),
            agent_id=text(data, "agent_id", event=judged),
        )
        turn = text(data, "turn_id", event=judged)
        if turn:
            call.extra["turn_id"] = turn
        if host_event == "SubagentStop":  # the subagent's own rollout, when Codex names it
            call.transcript_path = text(data, "agent_transcript_path", event=judged) or call.transcript_path
        return needs_tool(call)

    def render(self, call: HostCall, verdict: Verdict) -> dict[str, Any] | None:
        out: dict[str, Any] = {}
        event = call.host_event
        if event in ("Stop", "SubagentStop"):
            if verdict.block is not None:
                out = {"decision": "block", "reason": verdict.block}
        elif event == "PreToolUse":
            out = _pre_tool_use(verdict)
        elif event == "PostToolUse":
            out = _post_tool_use(verdict)
        message = joined(verdict.notes)
        if message:
            out["systemMessage"] = message
        return out or None


def _pre_tool_use(verdict: Verdict) -> dict[str, Any]:
    specific: dict[str, Any] = {"hookEventName": "PreToolUse"}
    if verdict.block is not None:
        specific["permissionDecision"] = "deny"
        specific["permissionDecisionReason"] = verdict.block
    elif verdict.updated_input is not None:  # only with --rewrite allow (see the docstring)
        specific["permissionDecision"] = "allow"
        specific["permissionDecisionReason"] = "judge rewrote the tool input"
        specific["updatedInput"] = verdict.updated_input
    if verdict.additional_context is not None:
        specific["additionalContext"] = verdict.additional_context
    return {"hookSpecificOutput": specific} if len(specific) > 1 else {}


def _post_tool_use(verdict: Verdict) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if verdict.block is not None:
        out = {"decision": "block", "reason": blocked_result_text(verdict.block)}
    if verdict.additional_context is not None:
        out["hookSpecificOutput"] = {
            "hookEventName": "PostToolUse",
            "additionalContext": verdict.additional_context,
        }
    return out


DIALECT = Codex()
