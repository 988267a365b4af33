"""judge's Stop gate in the OpenAI Agents SDK: an output guardrail, and the retry loop it needs.

The SDK's output guardrails can only halt a run (``OutputGuardrailTripwireTriggered``);
sending the agent back with the reason is the caller's loop. So:

* :func:`stop_guardrail` - an ``OutputGuardrail`` asking a
  :class:`~judge.integrations.stop_gate.StopGate` about the final answer; it trips when
  judge sends the agent back, with the :class:`~judge.integrations.stop_gate.StopVerdict`
  as ``output_info``, and lets a forced stop through (``maxRejections`` reached);
* :func:`run_until_judged` - ``Runner.run`` with that guardrail, and on a trip the same
  history plus the rejected answer and judge's feedback (a user message) run again, by the
  agent that finished (after a handoff, that one). Bounded twice: the gate's
  ``maxRejections`` forces the stop, and ``max_attempts`` ends a loop whose Stop hooks
  never force one (command hooks) by raising the last trip.

What the judge reads: the conversation the model was last sent (recorded by
:class:`TranscriptHooks`, which :func:`run_until_judged` installs, passing every event on
to your own hooks) - the instructions, the input, this run's tool calls and results - and
the final answer. A guardrail used without the loop sees only the run's input and the answer.
"""

from __future__ import annotations

import contextvars
import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from agents import (
    Agent,
    GuardrailFunctionOutput,
    ItemHelpers,
    OutputGuardrail,
    OutputGuardrailTripwireTriggered,
    RunConfig,
    RunContextWrapper,
    RunHooks,
    Runner,
    RunResult,
)

from judge.integrations.dispatcher import run_sync
from judge.integrations.openai_agents.messages import chat_messages
from judge.integrations.stop_gate import StopGate, StopVerdict

#: Attempts of :func:`run_until_judged` when the gate never forces a stop (judge's cap on hosts).
MAX_ATTEMPTS = 8
#: Keyword arguments whose history the loop would double when it sends the whole history again.
_OWN_HISTORY = ("session", "conversation_id", "previous_response_id", "auto_previous_response_id")


@dataclass
class _Seen:
    system: str | None = None
    items: list[Any] | None = None


_SEEN: contextvars.ContextVar[_Seen | None] = contextvars.ContextVar("judge_agents_seen", default=None)


class TranscriptHooks(RunHooks[Any]):
    """Run hooks recording what the model was last sent, for the judge; every event is
    passed on to ``inner`` (your own hooks) as well."""

    def __init__(self, inner: RunHooks[Any] | None = None) -> None:
        self.inner = inner

    async def on_llm_start(
        self, context: RunContextWrapper[Any], agent: Agent[Any], system_prompt: str | None, input_items: Any
    ) -> None:
        seen = _SEEN.get()
        if seen is not None:
            seen.system, seen.items = system_prompt, list(input_items)
        if self.inner is not None:
            await self.inner.on_llm_start(context, agent, system_prompt, input_items)

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        if self.inner is not None:
            await self.inner.on_llm_end(context, agent, response)

    async def on_agent_start(self, context: Any, agent: Any) -> None:
        if self.inner is not None:
            await self.inner.on_agent_start(context, agent)

    async def on_agent_end(self, context: Any, agent: Any, output: Any) -> None:
        if self.inner is not None:
            await self.inner.on_agent_end(context, agent, output)

    async def on_handoff(self, context: Any, from_agent: Any, to_agent: Any) -> None:
        if self.inner is not None:
            await self.inner.on_handoff(context, from_agent, to_agent)

    async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
        if self.inner is not None:
            await self.inner.on_tool_start(context, agent, tool)

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
        if self.inner is not None:
            await self.inner.on_tool_end(context, agent, tool, result)


def answer_text(output: Any) -> str:
    """A final output as text (a structured output as its JSON)."""
    if isinstance(output, str):
        return output
    dump = getattr(output, "model_dump", None)
    value = dump(mode="json") if callable(dump) else output
    return json.dumps(value, ensure_ascii=False, default=str)


def stop_guardrail(
    stop_gate: StopGate, *, session_id: str | None = None, name: str = "judge_stop"
) -> OutputGuardrail[Any]:
    """An output guardrail judging the final answer with ``stop_gate`` (see the module
    docstring); ``session_id`` keys its rejection count (default: the gate's session)."""

    async def judge_stop(
        ctx: RunContextWrapper[Any], agent: Agent[Any], output: Any
    ) -> GuardrailFunctionOutput:
        seen = _SEEN.get()
        text = answer_text(output)
        if seen is not None and seen.items is not None:
            messages = [{"role": "system", "content": seen.system}] if seen.system else []
            messages += chat_messages(seen.items)
        else:
            messages = chat_messages(ItemHelpers.input_to_new_input_list(ctx.turn_input))
        messages.append({"role": "assistant", "content": text})
        verdict = await stop_gate.check(text, messages, session_id=session_id)
        return GuardrailFunctionOutput(output_info=verdict, tripwire_triggered=not verdict.stop)

    return OutputGuardrail(guardrail_function=judge_stop, name=name)


async def run_until_judged(
    agent: Agent[Any],
    input: str | list[Any],
    stop_gate: StopGate,
    *,
    session_id: str | None = None,
    max_attempts: int = MAX_ATTEMPTS,
    hooks: RunHooks[Any] | None = None,
    run_config: RunConfig | None = None,
    **runner_kwargs: Any,
) -> RunResult:
    """``Runner.run(agent, input, ...)`` until judge lets the agent stop (see the module
    docstring). Other guardrails' trips, and ours after ``max_attempts`` runs, are raised."""
    clashing = [key for key in _OWN_HISTORY if runner_kwargs.get(key)]
    if clashing:
        raise TypeError(
            f"run_until_judged sends the whole history again on each attempt; with {clashing[0]} "
            "(history kept elsewhere) use stop_guardrail in your own loop"
        )
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be at least 1, got {max_attempts}")
    guardrail = stop_guardrail(stop_gate, session_id=session_id)
    config = run_config or RunConfig()
    config = dataclasses.replace(config, output_guardrails=[*(config.output_guardrails or []), guardrail])
    token = _SEEN.set(_Seen())
    try:
        current, items = agent, input
        for attempt in range(1, max_attempts + 1):
            try:
                return await Runner.run(
                    current, items, hooks=TranscriptHooks(hooks), run_config=config, **runner_kwargs
                )
            except OutputGuardrailTripwireTriggered as exc:
                verdict = exc.guardrail_result.output.output_info
                data = exc.run_data
                if exc.guardrail_result.guardrail is not guardrail or attempt == max_attempts or data is None:
                    raise
                assert isinstance(verdict, StopVerdict)
                items = [
                    *ItemHelpers.input_to_new_input_list(data.input),
                    *(item.to_input_item() for item in data.new_items),
                    verdict.openai_message,
                ]
                current = data.last_agent
        raise AssertionError("unreachable: the last attempt returns or raises")
    finally:
        _SEEN.reset(token)


def run_until_judged_sync(
    agent: Agent[Any], input: str | list[Any], stop_gate: StopGate, **kwargs: Any
) -> RunResult:
    """:func:`run_until_judged` for synchronous code (in a helper thread inside a loop)."""
    return run_sync(run_until_judged(agent, input, stop_gate, **kwargs))
