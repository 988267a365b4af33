"""Google Gemini CLI's hook protocol (``judge gemini``), as of Gemini CLI 0.61.

Where: the ``hooks`` key of ``~/.gemini/settings.json`` (a project's
``.gemini/settings.json`` in a trusted folder; the layers add up), Claude-style matcher
groups, ``timeout`` in **milliseconds** (default 60000). The settings file holds
everything else too (auth, model, ...): the installer merges into it.

Events judge serves: ``AfterAgent`` (judged as Stop), ``BeforeTool`` (PreToolUse),
``AfterTool`` (PostToolUse). Gemini has no subagent stop. Tool names are Gemini's own:
``run_shell_command`` (``tool_input.command``), ``write_file``, ``replace``,
``read_file``, ``glob``, ``search_file_content``, MCP tools ``mcp_<server>_<tool>``.

Input: ``session_id``, ``transcript_path`` (the chat JSONL), ``cwd``, ``hook_event_name``,
``timestamp``; AfterAgent adds ``prompt`` (the user's prompt, unchanged on retries),
``prompt_response`` (the agent's answer: on a retry, everything it answered to that
prompt so far, so judge judges the chat log's last answer and falls back to this) and
``stop_hook_active``; BeforeTool ``tool_name``, ``tool_input``;
AfterTool adds ``tool_response`` (``{llmContent, returnDisplay, error?}``).

Output (exit 0): Gemini parses stdout as JSON whatever the exit code, and treats a
non-JSON exit of 2 or more as a denial with the text as reason - judge always answers
JSON on exit 0.

* AfterAgent: ``{"decision": "block", "reason": R}`` - R is sent as the next user message
  and the agent goes on. **Gemini has no effective cap** (120 blocks in a row were
  honoured), so judge caps them itself.
* BeforeTool deny: ``{"decision": "deny", "reason": R}`` - the model gets ``Tool execution
  blocked: R``. A rewrite is ``hookSpecificOutput.tool_input``, merged into the call's
  arguments (Gemini's own permission flow still applies).
* AfterTool: ``{"decision": "deny", "reason": R}`` replaces the result;
  ``hookSpecificOutput.additionalContext`` is appended to it.
* ``systemMessage`` is shown to the user.

Failures: a crash, a timeout or non-JSON output on exit 0/1 are **fail-open** on every
event; judge answers its own failures in JSON (a BeforeTool check that cannot run is
denied).
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

CONFIG_EVENT: dict[str, str] = {
    "AfterAgent": "Stop",
    "BeforeTool": "PreToolUse",
    "AfterTool": "PostToolUse",
}
HOST_EVENTS: dict[str, tuple[str, ...]] = {
    "Stop": ("AfterAgent",),
    "PreToolUse": ("BeforeTool",),
    "PostToolUse": ("AfterTool",),
}
#: Gemini's default hook timeout (milliseconds).
DEFAULT_TIMEOUT_MS = 60_000


class Gemini(Dialect):
    name: ClassVar[str] = "gemini"
    title: ClassVar[str] = "Gemini CLI"
    block_cap: ClassVar[int | None] = None
    rewrites: ClassVar[bool] = True
    transcript_format: ClassVar[str] = "gemini"
    answer_from_log: ClassVar[bool] = True
    config_events: ClassVar[dict[str, str]] = CONFIG_EVENT

    host_events: ClassVar[dict[str, tuple[str, ...]]] = HOST_EVENTS
    timeout_scale: ClassVar[int] = 1000

    def settings_file(self, scope: str, project: Path, env: Mapping[str, str] = os.environ) -> Path:
        if scope == "project":
            return project / ".gemini" / "settings.json"
        return Path(env.get("HOME") or Path.home()) / ".gemini" / "settings.json"

    def parse(self, data: Mapping[str, Any], event: str | None = None) -> HostCall:
        host_event = text(data, "hook_event_name")
        if not host_event:
            raise HostInputError("invalid hook input: no hook_event_name (expected Gemini CLI's hook JSON)")
        judged = CONFIG_EVENT.get(host_event)
        active = flag(data, "stop_hook_active", event=judged)
        call = HostCall(
            host_event=host_event,
            event=judged,
            session_id=text(data, "session_id", event=judged),
            cwd=text(data, "cwd", event=judged),
            transcript_path=text(data, "transcript_path", event=judged),
            final_output=text(data, "prompt_response", event=judged),
            stop_hook_active=active,
            new_loop=not active,
            tool_name=text(data, "tool_name", event=judged),
            tool_input=data.get("tool_input"),
        )
        prompt = text(data, "prompt", event=judged)
        if prompt is not None:
            call.extra["prompt"] = prompt
        response = data.get("tool_response")
        if host_event == "AfterTool":
            call.tool_result = response
            error = response.get("error") if isinstance(response, dict) else None
            if error:
                call.tool_succeeded, call.tool_error = False, error
        return needs_tool(call)

    def render(self, call: HostCall, verdict: Verdict) -> dict[str, Any] | None:
        out: dict[str, Any] = {}
        event = call.host_event
        if event == "AfterAgent" and verdict.block is not None:
            out = {"decision": "block", "reason": verdict.block}
        elif event == "BeforeTool":
            out = _before_tool(verdict)
        elif event == "AfterTool":
            if verdict.block is not None:
                out = {"decision": "deny", "reason": blocked_result_text(verdict.block)}
            if verdict.additional_context is not None:
                out["hookSpecificOutput"] = {
                    "hookEventName": "AfterTool",
                    "additionalContext": verdict.additional_context,
                }
        message = joined(verdict.notes)
        if message:
            out["systemMessage"] = message
        return out or None


def _before_tool(verdict: Verdict) -> dict[str, Any]:
    if verdict.block is not None:
        return {"decision": "deny", "reason": verdict.block}
    specific: dict[str, Any] = {"hookEventName": "BeforeTool"}
    if isinstance(verdict.updated_input, dict):
        specific["tool_input"] = verdict.updated_input
    if verdict.additional_context is not None:
        specific["additionalContext"] = verdict.additional_context
    return {"hookSpecificOutput": specific} if len(specific) > 1 else {}


DIALECT = Gemini()
