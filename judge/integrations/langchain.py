"""judge in LangChain v1 agents (``pip install 'judge-hooks[langchain]'``): one ``AgentMiddleware``.

::

    from langchain.agents import create_agent
    from judge import Engine, Gate, SessionFacts, load_config
    from judge.integrations.langchain import JudgeMiddleware

    gate = Gate(Engine(load_config("judge.yaml")))
    agent = create_agent(model, tools, middleware=[JudgeMiddleware(gate, SessionFacts(tier="free"))])

* **Stop** (``after_agent``): when the agent is done, a
  :class:`~judge.integrations.stop_gate.StopGate` judges its last answer, with the whole
  conversation as the transcript (LangChain's messages as OpenAI chat messages); a
  rejection adds judge's feedback as a user message and jumps back to the model
  (``jump_to: "model"``), a stop (or the forced stop at ``maxRejections``) ends the run.
  Counts are kept per session: the trusted ``session_id``, else the run's ``thread_id``.
* **PreToolUse / PostToolUse** (``wrap_tool_call``): the same steps as
  :func:`~judge.integrations.dispatcher.wrap_dispatcher` - a denial is a
  ``ToolMessage(status="error")`` saying ``BLOCKED: <reason>`` (the tool does not run; a
  check that cannot run denies too), a rewrite runs the rewritten call, a block replaces
  the result with ``[Hook Blocked Tool Result] <reason>``, ``additionalContext`` is added to
  it. A handler that answers with a ``Command`` is left alone.

Sync (``invoke``) and async (``ainvoke``) runs are both served. ``stop=False`` or
``tools=False`` turns a part off; ``name`` tells several instances apart (LangChain
refuses two middlewares of one name). Importing this module imports LangChain; nothing
else in judge does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

try:
    from langchain.agents.middleware import AgentMiddleware, hook_config
    from langchain.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.messages import convert_to_openai_messages
except ImportError as exc:  # pragma: no cover - depends on what is installed
    raise ImportError(
        "judge.integrations.langchain needs LangChain 1.x: pip install 'judge-hooks[langchain]'"
    ) from exc

from judge.hooks.engine import Engine
from judge.hooks.gate import Gate
from judge.integrations.dispatcher import SessionFacts, _Hooks, as_gate, run_sync
from judge.integrations.stop_gate import StopGate

__all__ = ["JudgeMiddleware"]


def _thread_id() -> str | None:
    """The running graph's ``thread_id`` (a conversation), when it has one."""
    try:
        from langgraph.config import get_config

        thread = get_config().get("configurable", {}).get("thread_id")
    except Exception:  # not inside a run, or no config
        return None
    return str(thread) if thread is not None else None


def _last_answer(messages: list[Any]) -> str:
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            return str(message.text)
    return ""


class JudgeMiddleware(AgentMiddleware):  # type: ignore[type-arg]
    """judge's Stop, PreToolUse and PostToolUse hooks in a LangChain agent (see the module)."""

    def __init__(
        self,
        gate_or_engine: Gate | Engine,
        trusted: SessionFacts | None = None,
        *,
        stop: bool = True,
        tools: bool = True,
        name: str | None = None,
    ) -> None:
        super().__init__()
        gate = as_gate(gate_or_engine)
        self.facts = trusted or SessionFacts()
        self.stop_gate = StopGate(gate, self.facts) if stop else None
        self.tool_hooks = _Hooks(gate, self.facts, None) if tools else None
        self._name = name or type(self).__name__

    @property
    def name(self) -> str:
        return self._name

    # -- Stop -------------------------------------------------------------------

    async def _judged(self, state: Any) -> dict[str, Any] | None:
        if self.stop_gate is None:
            return None
        messages = list(state["messages"])
        session = self.facts.session_id or _thread_id()
        verdict = await self.stop_gate.check(
            _last_answer(messages), convert_to_openai_messages(messages), session_id=session
        )
        if verdict.stop:
            return None
        return {"jump_to": "model", "messages": [HumanMessage(content=verdict.feedback or "")]}

    @hook_config(can_jump_to=["model"])
    def after_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return run_sync(self._judged(state))

    @hook_config(can_jump_to=["model"])
    async def aafter_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return await self._judged(state)

    # -- tool calls -------------------------------------------------------------

    def _tool_use(self, request: Any) -> dict[str, Any]:
        call = request.tool_call
        return {"type": "tool_use", "id": call.get("id"), "name": call.get("name"), "input": call.get("args")}

    def _before(self, request: Any, tool_use: dict[str, Any], denied: dict[str, Any] | None) -> Any:
        """The ToolMessage of a denial, or the request to run (rewritten when the policy says)."""
        call = request.tool_call
        if denied is not None:
            return ToolMessage(
                content=denied["content"], tool_call_id=call.get("id"), name=call.get("name"), status="error"
            )
        if tool_use["input"] is not call.get("args"):
            return request.override(tool_call={**call, "args": tool_use["input"]})
        return request

    def _result(self, message: ToolMessage) -> dict[str, Any]:
        return {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id,
            "content": message.content,
            "is_error": message.status == "error",
        }

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        if self.tool_hooks is None:
            return handler(request)
        tool_use, denied = run_sync(self.tool_hooks.pre(self._tool_use(request)))
        ready = self._before(request, tool_use, denied)
        if isinstance(ready, ToolMessage):
            return ready
        result = handler(ready)
        if not isinstance(result, ToolMessage):
            return result  # a Command: not a tool result to judge
        after = run_sync(self.tool_hooks.post(tool_use, self._result(result)))
        return (
            result
            if after["content"] is result.content
            else result.model_copy(update={"content": after["content"]})
        )

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        if self.tool_hooks is None:
            return await handler(request)
        tool_use, denied = await self.tool_hooks.pre(self._tool_use(request))
        ready = self._before(request, tool_use, denied)
        if isinstance(ready, ToolMessage):
            return ready
        result = await handler(ready)
        if not isinstance(result, ToolMessage):
            return result
        after = await self.tool_hooks.post(tool_use, self._result(result))
        return (
            result
            if after["content"] is result.content
            else result.model_copy(update={"content": after["content"]})
        )
