"""Facts of Claude Code's hook protocol that the adapter, the installer and ``validate`` share.

Kept free of heavy imports: ``judge claude-code`` starts on every tool call.

* Which Claude Code events judge serves, and which judge configuration event each maps to
  (``PostToolUseFailure`` is judged by the ``PostToolUse`` hooks, with ``tool_succeeded:
  false``; ``PreSkillShellCommand`` - a shell command written in a skill or slash command,
  run without the Bash tool and so without ``PreToolUse`` - by the ``PreToolUse`` hooks).
* Claude Code's cap on consecutive Stop blocks (8 unless ``CLAUDE_CODE_STOP_HOOK_BLOCK_CAP``
  says otherwise): a ``maxRejections`` above it never takes effect, because Claude Code
  ends the turn first. :func:`block_cap_warnings` names such hooks.
* The hook input on stdin (:class:`ClaudeCodeInput`, :func:`parse_input`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from judge.integrations.claude_code.fast_path import HANDLED_EVENTS as HANDLED_EVENTS
from judge.integrations.claude_code.fast_path import SESSION_START as SESSION_START

if TYPE_CHECKING:
    from judge.config import Config

#: Judge configuration events about one tool call (their hooks match on the tool name).
_TOOL_EVENTS: tuple[str, ...] = ("PreToolUse", "PostToolUse")
#: The judge configuration event whose hooks judge a Claude Code event.
CONFIG_EVENT: dict[str, str] = {
    "Stop": "Stop",
    "SubagentStop": "SubagentStop",
    "PreToolUse": "PreToolUse",
    "PreSkillShellCommand": "PreToolUse",
    "PostToolUse": "PostToolUse",
    "PostToolUseFailure": "PostToolUse",
}
#: The Claude Code events to register for the hooks of one judge configuration event.
CLAUDE_CODE_EVENTS: dict[str, tuple[str, ...]] = {
    "Stop": ("Stop",),
    "SubagentStop": ("SubagentStop",),
    "PreToolUse": ("PreToolUse", "PreSkillShellCommand"),
    "PostToolUse": ("PostToolUse", "PostToolUseFailure"),
}
#: Claude Code ends the turn after this many consecutive Stop blocks (2.1.143 and later).
CLAUDE_CODE_BLOCK_CAP = 8
#: The environment variable that changes that cap.
BLOCK_CAP_ENV = "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP"
#: The text the model sees instead of a withheld tool result.
BLOCKED_RESULT_PREFIX = "[Hook Blocked Tool Result]"

#: How a PreToolUse rewrite (``updatedInput``) is handed to Claude Code.
RewriteMode = Literal["passthrough", "ask", "allow"]
REWRITE_MODES: tuple[str, ...] = ("passthrough", "ask", "allow")
DEFAULT_REWRITE_MODE: RewriteMode = "passthrough"
REWRITE_ENV = "JUDGE_CLAUDE_CODE_REWRITE"


def claude_code_block_cap(env: Mapping[str, str] | None = None) -> int:
    """Claude Code's consecutive Stop-block cap: ``$CLAUDE_CODE_STOP_HOOK_BLOCK_CAP`` or 8."""
    raw = (os.environ if env is None else env).get(BLOCK_CAP_ENV, "").strip()
    try:
        value = int(raw)
    except ValueError:
        return CLAUDE_CODE_BLOCK_CAP
    return value if value > 0 else CLAUDE_CODE_BLOCK_CAP


def takes_effect_under_claude_code(max_rejections: int, cap: int) -> bool:
    """Whether a Stop hook's ``maxRejections`` can end the loop under Claude Code.

    Claude Code lets ``cap`` consecutive blocks continue the turn and overrides the next
    one; judge forces the stop itself at its ``maxRejections``-th rejection, so a limit of
    up to ``cap + 1`` still takes effect (judge's forced stop is that same Stop)."""
    return max_rejections <= cap + 1


def block_cap_warnings(config: Config, cap: int | None = None) -> list[str]:
    """One message per prompt Stop/SubagentStop hook whose ``maxRejections`` exceeds the cap.

    Such a hook's limit never takes effect under Claude Code: Claude Code ends the turn
    after ``cap`` consecutive blocks, before judge forces the stop itself.
    """
    limit = claude_code_block_cap() if cap is None else cap
    problems: list[str] = []
    places: list[tuple[str, Any]] = [("hooks", config.hooks)]
    places += [(f"customAgents.{name}.hooks", agent.hooks) for name, agent in config.custom_agents.items()]
    for prefix, hookset in places:
        for event in ("Stop", "SubagentStop"):
            for index, hook in enumerate(hookset.for_event(event)):
                if hook.type == "prompt" and not takes_effect_under_claude_code(hook.max_rejections, limit):
                    problems.append(
                        f"{prefix}.{event}[{index}].maxRejections: {hook.max_rejections} is above "
                        f"Claude Code's cap of {limit} consecutive Stop blocks ({BLOCK_CAP_ENV}); "
                        "under Claude Code the turn ends at the cap, so this limit never takes effect"
                    )
    return problems


class ClaudeCodeInput(BaseModel):
    """Claude Code's hook input (the fields used here; others are kept and ignored)."""

    model_config = ConfigDict(extra="allow")

    hook_event_name: str
    session_id: str | None = None
    transcript_path: str | None = None
    cwd: str | None = None
    permission_mode: str | None = None
    stop_hook_active: bool = False
    last_assistant_message: str | None = None
    agent_id: str | None = None
    agent_type: str | None = None
    agent_transcript_path: str | None = None
    tool_name: str | None = None
    tool_input: Any = None
    tool_response: Any = None
    tool_use_id: str | None = None
    error: Any = None
    is_interrupt: bool | None = None
    # Newer fields, kept loose (a shape change must not make the input unusable):
    #: Stop/SubagentStop (2.1.145+): background work the agent started, and its status
    background_tasks: Any = None
    #: Stop/SubagentStop (2.1.145+): scheduled prompts of the session
    session_crons: Any = None
    #: tool events of an MCP tool: ``{name, source}`` (trust ``source``, not the name)
    mcp_server: Any = None
    #: PostToolUse/PostToolUseFailure (2.1.119+): how long the tool ran
    duration_ms: Any = None
    #: PreSkillShellCommand: the skill or slash command whose text holds the shell command
    command_name: Any = None
    #: PreSkillShellCommand: where that skill or command is defined
    command_source: Any = None
    #: PreSkillShellCommand: who expanded the skill or command (``user``, ``claude``, ``other``)
    invoked_by: Any = None

    @property
    def config_event(self) -> str:
        """The judge configuration event whose hooks judge this input."""
        return CONFIG_EVENT.get(self.hook_event_name, self.hook_event_name)


class InputError(Exception):
    """The hook input on stdin is unusable. ``data``: the JSON object, when it was one
    (its event may still be known, so the adapter can apply that event's failMode)."""

    def __init__(self, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.data = data

    @property
    def event(self) -> str | None:
        """The Claude Code event the unusable input was for, when that much is readable."""
        name = (self.data or {}).get("hook_event_name")
        return name if isinstance(name, str) else None


#: Where an input that cannot be parsed still names its event and tool (Claude Code writes
#: them before the tool's input and response).
_HEAD_FIELD = re.compile(
    r'"(hook_event_name|tool_name|agent_type|session_id)"\s*:\s*"([A-Za-z0-9_.:-]{1,200})"'
)


def head_fields(text: str) -> dict[str, Any] | None:
    """``hook_event_name``, ``tool_name``, ``agent_type`` and ``session_id`` as first named in the first 64
    KiB of ``text``, before the tool's input or response (Claude Code writes its own fields
    first; in the tool's input an agent could write the same keys)."""
    head = text[: 64 * 1024]
    for key in ('"tool_input"', '"tool_response"'):  # where the agent's own text begins
        head = head.split(key, 1)[0]
    found: dict[str, Any] = {}
    for name, value in _HEAD_FIELD.findall(head):
        found.setdefault(name, value)
    return found or None


def parse_input(text: str) -> ClaudeCodeInput:
    """Validate the stdin JSON; raise :class:`InputError` with a readable message."""
    if not text.strip():
        raise InputError("no hook input on stdin (expected Claude Code's hook JSON)")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        raise InputError(f"hook input is not JSON ({where}: {exc.msg})", head_fields(text)) from None
    except RecursionError:
        raise InputError("hook input is nested too deeply to be read", head_fields(text)) from None
    if not isinstance(data, dict):
        raise InputError(f"hook input must be a JSON object, got {type(data).__name__}")
    try:
        hook_input = ClaudeCodeInput.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<input>'}: {err['msg']}" for err in exc.errors()
        )
        raise InputError(f"invalid hook input: {problems}", data) from None
    if hook_input.config_event in _TOOL_EVENTS and not hook_input.tool_name:
        raise InputError(f"invalid hook input: {hook_input.hook_event_name} without a tool_name", data)
    return hook_input
