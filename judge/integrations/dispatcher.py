"""Tool-call hooks inside a hand-written agent: wrap the dispatcher.

Most agents have a ``call_tool`` that takes a ``tool_use`` block
(``{"type": "tool_use", "id": ..., "name": ..., "input": {...}}``) and returns its
``tool_result``. :func:`wrap_dispatcher` saves that function first, then returns a
wrapper that

1. builds the event from the tool call and the frozen, trusted :class:`SessionFacts`;
2. runs the PreToolUse hooks — a denial returns a synthetic ``tool_result`` with the same
   ``tool_use_id``, ``is_error: true`` and ``BLOCKED: <reason>`` content, so the
   conversation stays valid and the tool never runs; a rewritten input is passed on;
3. calls the saved original exactly once;
4. runs the PostToolUse hooks — a block replaces the result content with
   ``[Hook Blocked Tool Result] <reason>``; ``additionalContext`` goes to
   ``on_additional_context`` (or, without one, is appended to the result as a text block);
5. returns the result.

Failures: a PreToolUse check that cannot run fails closed (the call is denied); a
PostToolUse hook that fails is logged to the ``judge.integrations`` logger and ignored.

Usage::

    original = dispatcher.call_tool                 # save the reference FIRST
    dispatcher.call_tool = wrap_dispatcher(original, gate, SessionFacts(user_id="u1", tier="free"))
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import inspect
import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar, overload

from judge.decision import Decision
from judge.hooks.engine import Engine
from judge.hooks.gate import Gate

log = logging.getLogger("judge.integrations")

ToolUse = dict[str, Any]
ToolResult = dict[str, Any]
ContextCallback = Callable[[str, ToolUse], None]

_T = TypeVar("_T")

#: (wrapper id, tool_use id) pairs whose original call is running in this context.
_ACTIVE: contextvars.ContextVar[frozenset[tuple[int, str]]] = contextvars.ContextVar(
    "judge_active_tool_calls", default=frozenset()
)


@dataclass(frozen=True)
class SessionFacts:
    """Trusted facts about the session, set by the server at session start; never changes.

    Security decisions rest on these, never on ``tool_input`` (which the model wrote).
    Hooks receive them under ``context["trusted"]``; ``session_id`` and ``agent_name`` are
    also the context's own fields (the agent name selects custom-agent hooks).
    """

    user_id: str | None = None
    tier: str | None = None
    session_id: str | None = None
    agent_name: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Freeze the mapping too, so no code path can change the trusted facts.
        object.__setattr__(self, "extra", MappingProxyType(dict(self.extra)))

    def trusted(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.extra)
        out.update(
            {
                "user_id": self.user_id,
                "tier": self.tier,
                "session_id": self.session_id,
                "agent_name": self.agent_name,
            }
        )
        return out

    def merge_into(self, context: dict[str, Any]) -> dict[str, Any]:
        """``context`` with the trusted fields applied last (nothing else can override them)."""
        merged = dict(context)
        merged["trusted"] = self.trusted()
        if self.session_id is not None:
            merged["session_id"] = self.session_id
        if self.agent_name is not None:
            merged["agent_name"] = self.agent_name
        return merged


def as_gate(gate_or_engine: Gate | Engine) -> Gate:
    return gate_or_engine if isinstance(gate_or_engine, Gate) else Gate(gate_or_engine)


def run_sync(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coro`` to completion from synchronous code (in a helper thread inside a loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        ctx = contextvars.copy_context()
        return pool.submit(ctx.run, asyncio.run, coro).result()


def blocked_result(tool_use_id: str, reason: str) -> ToolResult:
    """The synthetic ``tool_result`` of a denied call: ``BLOCKED: <reason>``,
    prefixed once (a reason that already starts with ``BLOCKED:`` is used as it is)."""
    text = reason if reason.lstrip().upper().startswith("BLOCKED:") else f"BLOCKED: {reason}"
    return {
        "type": "tool_result",
        "tool_use_id": tool_use_id,
        "is_error": True,
        "content": text,
    }


def _as_result(tool_use_id: str, value: Any) -> ToolResult:
    """The original's return value as a ``tool_result`` block (kept as is when it is one)."""
    if isinstance(value, dict) and value.get("type") == "tool_result":
        return dict(value)
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": value if value is not None else ""}


def _with_context(result: ToolResult, extra: str) -> ToolResult:
    content = result.get("content")
    blocks: list[Any]
    if isinstance(content, list):
        blocks = list(content)
    elif content in (None, ""):
        blocks = []
    else:
        blocks = [{"type": "text", "text": content if isinstance(content, str) else str(content)}]
    blocks.append({"type": "text", "text": extra})
    return {**result, "content": blocks}


class _Hooks:
    """The PreToolUse/PostToolUse steps shared by the sync and async wrappers."""

    def __init__(
        self,
        gate: Gate,
        trusted: SessionFacts,
        on_additional_context: ContextCallback | None,
    ) -> None:
        self.gate = gate
        self.trusted = trusted
        self.on_additional_context = on_additional_context

    def event(self, name: str, tool_use: ToolUse, **more: Any) -> dict[str, Any]:
        base = {"hook_event_name": name, "tool_name": str(tool_use.get("name") or ""), **more}
        base["tool_input"] = tool_use.get("input") if tool_use.get("input") is not None else {}
        if tool_use.get("id") is not None:
            base["tool_use_id"] = str(tool_use["id"])
        return self.trusted.merge_into(base)

    async def pre(self, tool_use: ToolUse) -> tuple[ToolUse, ToolResult | None]:
        """(the tool_use to run, or the synthetic result of a denial)."""
        if not isinstance(tool_use, Mapping):
            raise TypeError(
                'call_tool takes a tool_use block ({"type": "tool_use", "id": ..., "name": ..., '
                f'"input": {{...}}}}), got {type(tool_use).__name__}'
            )
        tool_id = str(tool_use.get("id") or "")
        try:
            decision = await self.gate.decide("PreToolUse", self.event("PreToolUse", tool_use))
        except Exception as exc:  # a broken policy check must not pass silently: fail closed
            log.error("PreToolUse check failed for %s; denying the call: %s", tool_use.get("name"), exc)
            return tool_use, blocked_result(tool_id, f"the policy check for this tool failed ({exc})")
        log_problems("PreToolUse", decision)
        if decision.decision == "block":
            return tool_use, blocked_result(tool_id, decision.reason or "tool call denied by policy")
        if decision.updated_input is not None:
            tool_use = {**tool_use, "input": decision.updated_input}
        return tool_use, None

    async def post(self, tool_use: ToolUse, result: ToolResult) -> ToolResult:
        content = result.get("content")
        event = self.event(
            "PostToolUse", tool_use, tool_result=content, tool_succeeded=not bool(result.get("is_error"))
        )
        try:
            decision = await self.gate.decide("PostToolUse", event)
        except Exception as exc:  # a side channel by default: log and carry on, unless a
            # selected hook says failMode: block - then the result is withheld
            hooks = self.gate.engine.selected_hooks("PostToolUse", event)
            if any(h.fails_closed("PostToolUse") for _, _, h in hooks):
                log.error(
                    "PostToolUse hooks failed for %s; withholding the result: %s", tool_use.get("name"), exc
                )
                failed = Decision(event="PostToolUse", decision="block", reason=f"Hook error: {exc}")
                return {**result, "content": failed.blocked_tool_result}
            log.error("PostToolUse hooks failed for %s (ignored): %s", tool_use.get("name"), exc)
            return result
        log_problems("PostToolUse", decision)
        if decision.blocked_tool_result is not None:
            result = {**result, "content": decision.blocked_tool_result}
        extra = decision.additional_context
        if extra is not None:
            if self.on_additional_context is not None:
                self.on_additional_context(extra, tool_use)
            else:
                result = _with_context(result, extra)
        return result


def log_problems(event: str, decision: Decision) -> None:
    """Log each hook error of ``decision`` and its notes (an unwritable audit log, ...)."""
    for hook in decision.hooks:
        if hook.error:
            log.warning("%s %s[%d] hook error: %s", hook.level, event, hook.index, hook.error)
    for note in decision.notes:
        log.error("%s: %s", event, note)


class _Reentry:
    """Detects the wrapper calling itself for the same tool call (a wrapped name lookup)."""

    def __init__(self, owner: object, tool_use: ToolUse) -> None:
        self.key = (id(owner), str(tool_use.get("id") or ""))
        self.token: contextvars.Token[frozenset[tuple[int, str]]] | None = None

    def __enter__(self) -> None:
        active = _ACTIVE.get()
        if self.key in active:
            raise RecursionError(
                "call_tool re-entered itself for the same tool call: save the original "
                "call_tool before replacing it (wrap the saved reference, not a name lookup)"
            )
        self.token = _ACTIVE.set(active | {self.key})

    def __exit__(self, *exc: object) -> None:
        if self.token is not None:
            _ACTIVE.reset(self.token)


class SyncHookedDispatcher:
    """``call_tool`` with hooks, for a synchronous original."""

    def __init__(self, original: Callable[[ToolUse], Any], hooks: _Hooks) -> None:
        self.original = original
        self.hooks = hooks

    def __call__(self, tool_use: ToolUse) -> ToolResult:
        tool_use, denied = run_sync(self.hooks.pre(tool_use))
        if denied is not None:
            return denied
        tool_id = str(tool_use.get("id") or "")
        with _Reentry(self, tool_use):
            result = _as_result(tool_id, self.original(tool_use))
        return run_sync(self.hooks.post(tool_use, result))


class AsyncHookedDispatcher:
    """``call_tool`` with hooks, for an ``async`` original."""

    def __init__(self, original: Callable[[ToolUse], Awaitable[Any]], hooks: _Hooks) -> None:
        self.original = original
        self.hooks = hooks

    async def __call__(self, tool_use: ToolUse) -> ToolResult:
        tool_use, denied = await self.hooks.pre(tool_use)
        if denied is not None:
            return denied
        tool_id = str(tool_use.get("id") or "")
        with _Reentry(self, tool_use):
            result = _as_result(tool_id, await self.original(tool_use))
        return await self.hooks.post(tool_use, result)


@overload
def wrap_dispatcher(
    call_tool: Callable[[ToolUse], Awaitable[Any]],
    gate_or_engine: Gate | Engine,
    trusted_context: SessionFacts,
    *,
    on_additional_context: ContextCallback | None = None,
) -> AsyncHookedDispatcher: ...


@overload
def wrap_dispatcher(
    call_tool: Callable[[ToolUse], Any],
    gate_or_engine: Gate | Engine,
    trusted_context: SessionFacts,
    *,
    on_additional_context: ContextCallback | None = None,
) -> SyncHookedDispatcher: ...


def wrap_dispatcher(
    call_tool: Callable[[ToolUse], Any],
    gate_or_engine: Gate | Engine,
    trusted_context: SessionFacts,
    *,
    on_additional_context: ContextCallback | None = None,
) -> SyncHookedDispatcher | AsyncHookedDispatcher:
    """Wrap ``call_tool`` (sync or ``async``) with the PreToolUse/PostToolUse hooks.

    ``call_tool`` is the *saved original*: it is held by reference and called exactly once
    per allowed tool call. Pass a :class:`judge.hooks.gate.Gate` to keep audit logs; an
    :class:`judge.hooks.engine.Engine` is wrapped in a plain gate.
    """
    if not callable(call_tool):
        raise TypeError(f"call_tool must be callable, got {type(call_tool).__name__}")
    if not isinstance(trusted_context, SessionFacts):
        raise TypeError("trusted_context must be a judge.integrations.SessionFacts")
    hooks = _Hooks(as_gate(gate_or_engine), trusted_context, on_additional_context)
    target = call_tool if inspect.isroutine(call_tool) else getattr(call_tool, "__call__", None)  # noqa: B004
    if inspect.iscoroutinefunction(call_tool) or inspect.iscoroutinefunction(target):
        return AsyncHookedDispatcher(call_tool, hooks)
    return SyncHookedDispatcher(call_tool, hooks)
