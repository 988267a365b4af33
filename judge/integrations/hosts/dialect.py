"""What a host dialect is: one agent host's hook protocol, in the terms the adapter core uses.

A dialect turns the host's hook input (a JSON object on stdin) into a :class:`HostCall`
and judge's answer (a :class:`Verdict`) into the host's output JSON. Everything host
specific - event names, input fields, output forms, exit-code rules, caps, where the
host keeps its hooks - lives in the host's own module (:mod:`.codex`, :mod:`.gemini`,
:mod:`.copilot`, :mod:`.cursor`); the core (:mod:`.core`) never names a host.

Standard library only: the fast path (:mod:`.fast_path`) parses hook input with it on
every tool call.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

#: judge configuration events a host event can be judged as.
STOP_EVENTS = ("Stop", "SubagentStop")
TOOL_EVENTS = ("PreToolUse", "PostToolUse")
#: Text the model sees in place of a withheld tool result (as under Claude Code).
BLOCKED_RESULT_PREFIX = "[Hook Blocked Tool Result]"


class HostInputError(Exception):
    """The hook input is unusable. ``event``: the judge event it was for, when that much
    is known (its hooks' failMode then decides); ``tool``: its tool, when readable."""

    def __init__(self, message: str, event: str | None = None, tool: str | None = None) -> None:
        super().__init__(message)
        self.event = event
        self.tool = tool


@dataclass
class HostCall:
    """One hook call of a host, in judge's terms."""

    #: the host's own event name (``AfterAgent``, ``agentStop``, ``preToolUse``, ...)
    host_event: str
    #: the judge configuration event whose hooks judge it; None: judge does not serve it
    event: str | None
    session_id: str | None = None
    cwd: str | None = None
    #: the host's transcript file, read for the history and (when the input lacks it) the
    #: final answer
    transcript_path: str | None = None
    #: the agent's final answer when the host sends it (Codex, Gemini, subagents)
    final_output: str | None = None
    #: the host says the agent is continuing because a Stop hook sent it back
    stop_hook_active: bool = False
    #: this Stop starts a new rejection loop (the count is reset first)
    new_loop: bool = True
    tool_name: str | None = None
    tool_input: Any = None
    tool_result: Any = None
    tool_succeeded: bool = True
    tool_error: Any = None
    tool_use_id: str | None = None
    agent_type: str | None = None
    agent_id: str | None = None
    permission_mode: str | None = None
    model: str | None = None
    #: why this call is answered without judging (say, a Stop after an aborted run)
    skip: str | None = None
    #: the shape the host sent (a host with two input forms answers in the same one)
    shape: str = "native"
    #: more host fields passed to hooks (``prompt``, ``stop_reason``, ...)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Verdict:
    """What judge answers, host-neutral: the dialect writes it in the host's form."""

    #: Stop: send the agent back with this; PreToolUse: deny with it; PostToolUse: withhold
    #: the result with it
    block: str | None = None
    #: PreToolUse: run the call with this input instead
    updated_input: Any = None
    #: PreToolUse: let the user confirm the call (its reason, or ""), where the host can ask
    ask: str | None = None
    #: tool events: text for the model beside the call or its result
    additional_context: str | None = None
    #: what the user should learn (a forced stop, a hook that could not run)
    notes: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return (
            self.block is None
            and self.ask is None
            and self.updated_input is None
            and self.additional_context is None
            and not self.notes
        )


class Dialect:
    """One host's hook protocol (subclassed once per host)."""

    #: the command's name (``judge codex``) and the host's name for people
    name: ClassVar[str]
    title: ClassVar[str]
    #: consecutive Stop blocks after which the host ends the turn by itself; None: the host
    #: honours blocks without limit, so judge caps them (:data:`.evaluate.JUDGE_BLOCK_CAP`)
    block_cap: ClassVar[int | None] = None
    #: whether a PreToolUse rewrite can reach the tool without skipping the host's own
    #: permission flow (else it needs ``--rewrite allow`` or becomes a denial)
    rewrites: ClassVar[bool] = False
    #: whether a PostToolUse block can replace the result the model sees
    withholds: ClassVar[bool] = True
    #: whether a PreToolUse answer can ask the user to confirm the call
    asks: ClassVar[bool] = False
    #: the host's transcript format (:mod:`judge.transcripts.host_logs`)
    transcript_format: ClassVar[str] = "jsonl"
    #: the answer in the host's log is judged before the one in its input (Gemini's input
    #: holds everything the agent answered to the prompt, retries included)
    answer_from_log: ClassVar[bool] = False
    #: the host's event names -> the judge configuration event whose hooks judge them
    config_events: ClassVar[dict[str, str]] = {}
    #: the installer: judge configuration event -> the host events registered for it
    host_events: ClassVar[dict[str, tuple[str, ...]]] = {}
    #: the installer: host timeout units per second (Gemini counts milliseconds)
    timeout_scale: ClassVar[int] = 1
    #: the installer: entries are flat (Cursor) rather than Claude-style matcher groups
    flat: ClassVar[bool] = False
    #: the installer: keys a new settings file starts with (``{"version": 1}``)
    preamble: ClassVar[dict[str, Any]] = {}

    def parse(self, data: Mapping[str, Any], event: str | None = None) -> HostCall:
        """The call for this hook input (``event``: the ``--event`` flag, if given);
        raises :class:`HostInputError` with a readable message."""
        raise NotImplementedError

    def render(self, call: HostCall, verdict: Verdict) -> dict[str, Any] | None:
        """The host's output JSON for ``verdict`` (``None``: print nothing, which every host
        reads as "go on")."""
        raise NotImplementedError

    def host_event_of(self, data: Mapping[str, Any], event: str | None = None) -> str | None:
        """The host event an input names (or ``--event``), read loosely: for an input
        :meth:`parse` refused, whose event's hooks' failMode then decides."""
        named = data.get("hook_event_name")
        return named if isinstance(named, str) and named else event

    def settings_file(self, scope: str, project: Path, env: Mapping[str, str] = os.environ) -> Path:
        """The file the installer edits for ``scope`` (``user`` or ``project``)."""
        raise NotImplementedError

    def handler(
        self, command: str, timeout: int, *, closed: bool = False, loops: int | None = None
    ) -> dict[str, Any]:
        """One hook entry running ``command`` with the host's ``timeout`` (in its units);
        ``closed``: the host should deny the call when the command fails (where it can);
        ``loops``: the most follow-ups a stop entry may send (where the host counts them)."""
        return {"type": "command", "command": command, "timeout": timeout}

    def tool_of(self, data: Mapping[str, Any]) -> str | None:
        """The tool an input names, read loosely (see :meth:`host_event_of`)."""
        for key in ("tool_name", "toolName"):
            if isinstance(data.get(key), str) and data[key]:
                return str(data[key])
        return None


# ---------------------------------------------------------------------------
# Reading fields strictly (the hook input is not ours to trust)


def text(data: Mapping[str, Any], key: str, *, event: str | None = None) -> str | None:
    """``data[key]`` when it is a string (``None`` when absent or null)."""
    value = data.get(key)
    if value is None or isinstance(value, str):
        return value
    raise HostInputError(f"invalid hook input: {key} must be a string, got {type(value).__name__}", event)


def flag(data: Mapping[str, Any], key: str, *, event: str | None = None) -> bool:
    """``data[key]`` when it is a boolean (``False`` when absent or null)."""
    value = data.get(key)
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    raise HostInputError(f"invalid hook input: {key} must be true or false, got {value!r}", event)


def first_text(data: Mapping[str, Any], *keys: str, event: str | None = None) -> str | None:
    """The first of ``keys`` that holds a string."""
    for key in keys:
        value = text(data, key, event=event)
        if value is not None:
            return value
    return None


def needs_tool(call: HostCall) -> HostCall:
    """``call``, refused when a tool event names no tool."""
    if call.event in TOOL_EVENTS and not call.tool_name:
        raise HostInputError(f"invalid hook input: {call.host_event} without a tool name", call.event)
    return call


def blocked_result_text(reason: str) -> str:
    return f"{BLOCKED_RESULT_PREFIX} {reason}"


def joined(notes: list[str]) -> str | None:
    """The notes as one message for the user (``None`` when there are none)."""
    return "judge: " + "; ".join(notes) if notes else None
