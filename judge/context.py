"""The context JSON each hook receives: snake_case, unknown fields kept."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from judge.config import STOP_EVENTS, unknown_event
from judge.errors import ContextError

#: Largest turn or rejection count accepted (anything near it is a caller's mistake; it
#: keeps every count a 64-bit integer where state is stored).
MAX_COUNT = 1_000_000_000


class HookContext(BaseModel):
    """Fields common to every event."""

    model_config = ConfigDict(extra="allow", strict=False)

    hook_event_name: str = Field(description="The event: Stop, PostToolUse, PreToolUse, ...")
    agent_name: str | None = Field(None, description="Agent (or custom agent) that is running.")
    current_turn: int | None = Field(None, ge=0, le=MAX_COUNT, description="The agent's current turn.")
    max_turns: int | None = Field(None, ge=0, le=MAX_COUNT, description="The agent's turn limit.")
    execution_summary: str | None = Field(
        None, description="PATH of the conversation transcript file (not its content)."
    )
    session_id: str | None = Field(None, description="Session id, when the caller has one.")

    @field_validator("current_turn", "max_turns", mode="before")
    @classmethod
    def _no_bool(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError("must be an integer")
        return value

    @field_validator("execution_summary")
    @classmethod
    def _a_path(cls, value: str | None) -> str | None:
        if value is not None and "\x00" in value:
            raise ValueError("a path cannot hold a NUL byte")
        return value


class StopContext(HookContext):
    """Stop / SubagentStop: the final answer and the rejection loop state."""

    final_output: str = Field("", description="The answer the agent is about to return.")
    stop_hook_active: bool = Field(False, description="True when the gate already rejected.")
    stop_rejection_count: int = Field(0, ge=0, le=MAX_COUNT, description="Rejections so far in this loop.")
    background_tasks: list[Any] | None = Field(
        None,
        description="Work the agent started that is still running (Claude Code's field): while it "
        "is not empty, prompt hooks with `backgroundTasks: defer` (the default) are not run.",
    )

    @field_validator("stop_rejection_count", mode="before")
    @classmethod
    def _count_no_bool(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError("must be an integer")
        return value


class PostToolUseContext(HookContext):
    """PostToolUse: the finished tool call."""

    tool_name: str = Field(description="Name of the tool that ran.")
    tool_input: Any = Field(default_factory=dict, description="Input the model gave the tool.")
    tool_result: Any = Field(None, description="What the tool returned.")
    tool_succeeded: bool = Field(True, description="Whether the tool call succeeded.")


class PreToolUseContext(HookContext):
    """PreToolUse: the tool call about to run."""

    tool_name: str = Field(description="Name of the tool about to run.")
    tool_input: Any = Field(default_factory=dict, description="Input the model gave the tool.")


def context_model(event: str) -> type[HookContext]:
    if event in STOP_EVENTS:
        return StopContext
    if event == "PostToolUse":
        return PostToolUseContext
    if event == "PreToolUse":
        return PreToolUseContext
    raise ContextError(unknown_event(event))


def parse_context(event: str, data: Any) -> HookContext:
    """Validate a context for ``event``; raise ContextError with located messages."""
    model = context_model(event)
    if not isinstance(data, dict):
        raise ContextError(f"context must be a JSON object, got {type(data).__name__}")
    given = data.get("hook_event_name")
    if given is not None and given != event:
        raise ContextError(f"hook_event_name is {given!r} but the event is {event!r}")
    payload = {**data, "hook_event_name": event}
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err["loc"]) or "<context>"
            problems.append(f"{where}: {err['msg']}")
        raise ContextError("invalid context: " + "; ".join(problems)) from None


def context_json(ctx: HookContext) -> dict[str, Any]:
    """The JSON object hooks receive (unknown fields kept, None-valued optionals dropped)."""
    try:
        data = ctx.model_dump(mode="json")
    except ValueError as exc:  # pydantic's "Maximum serialization depth exceeded"
        raise ContextError(f"context is nested too deeply to be judged ({exc})") from None
    optional = {k for k, f in type(ctx).model_fields.items() if k != "tool_result" and f.default is None}
    return {k: v for k, v in data.items() if v is not None or k not in optional}
