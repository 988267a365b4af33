"""judge's PreToolUse / PostToolUse hooks as OpenAI Agents SDK tool guardrails.

:func:`tool_guardrails` gives a ``ToolInputGuardrail`` and a ``ToolOutputGuardrail`` asking
the gate about each call of a ``FunctionTool``; :func:`judged_tools` attaches them to a
list of tools (copies: your tools are left as they are; tools other than ``FunctionTool``s -
hosted tools, handoffs - are not called by the SDK through guardrails and are returned as
they are). Every event carries the trusted
:class:`~judge.integrations.dispatcher.SessionFacts`.

* PreToolUse: a denial is ``reject_content("BLOCKED: <reason>")`` - the tool does not run,
  the model reads that as its output, the run goes on. A check that cannot run (a raising
  gate) is a denial too (fail closed): a raising guardrail would abort the whole run.
  Guardrails cannot rewrite arguments, so a hook's ``updatedInput`` is a denial saying
  what the policy would run; an "ask" runs (no one can be asked), and is logged.
* PostToolUse: a block replaces the output with ``[Hook Blocked Tool Result] <reason>``;
  ``additionalContext`` is appended to the output (both through ``reject_content``, the
  only way a guardrail changes an output, so the SDK records them as rejections). A
  failing check is logged and the output kept, unless a selected hook says ``failMode:
  block``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Sequence
from typing import Any

from agents import (
    FunctionTool,
    ToolGuardrailFunctionOutput,
    ToolInputGuardrail,
    ToolInputGuardrailData,
    ToolOutputGuardrail,
    ToolOutputGuardrailData,
)

from judge.decision import Decision
from judge.hooks.engine import Engine
from judge.hooks.gate import Gate
from judge.integrations.dispatcher import SessionFacts, as_gate, blocked_result, log_problems
from judge.transcripts.claude_code_text import one_line

log = logging.getLogger("judge.integrations")


def _arguments(raw: str | None) -> Any:
    try:
        return json.loads(raw) if raw else {}
    except ValueError:
        return raw  # what the model wrote, as it wrote it


def _event(facts: SessionFacts, name: str, context: Any, **more: Any) -> dict[str, Any]:
    event = {
        "hook_event_name": name,
        "tool_name": str(context.tool_name),
        "tool_input": _arguments(context.tool_arguments),
        "tool_use_id": str(context.tool_call_id),
        **more,
    }
    return facts.merge_into(event)


def _denial(decision: Decision) -> str | None:
    """Why a PreToolUse decision stops the call (``None``: it runs)."""
    if decision.decision == "block":
        return decision.reason or "tool call denied by policy"
    if decision.updated_input is not None:
        return (
            f"the policy would run this call as {one_line(str(decision.updated_input), 300)}; "
            "a tool guardrail cannot rewrite it: make the call that way instead"
        )
    if decision.ask is not None:
        log.warning(
            "PreToolUse: a hook asks to confirm the call (%s); no one can be asked: it runs", decision.ask
        )
    return None


def tool_guardrails(
    gate_or_engine: Gate | Engine, trusted: SessionFacts | None = None
) -> tuple[ToolInputGuardrail[Any], ToolOutputGuardrail[Any]]:
    """The PreToolUse and PostToolUse guardrails (see the module docstring)."""
    gate = as_gate(gate_or_engine)
    facts = trusted or SessionFacts()

    async def judge_pre_tool_use(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        context = data.context
        try:
            decision = await gate.decide("PreToolUse", _event(facts, "PreToolUse", context))
        except Exception as exc:  # a broken policy check must not pass silently: fail closed
            log.error("PreToolUse check failed for %s; denying the call: %s", context.tool_name, exc)
            reason = f"the policy check for this tool failed ({exc})"
            return ToolGuardrailFunctionOutput.reject_content(blocked_result("", reason)["content"])
        log_problems("PreToolUse", decision)
        denied = _denial(decision)
        if denied is not None:
            return ToolGuardrailFunctionOutput.reject_content(blocked_result("", denied)["content"], decision)
        return ToolGuardrailFunctionOutput.allow(decision)

    async def judge_post_tool_use(data: ToolOutputGuardrailData) -> ToolGuardrailFunctionOutput:
        context, output = data.context, data.output
        event = _event(facts, "PostToolUse", context, tool_result=output, tool_succeeded=True)
        try:
            decision = await gate.decide("PostToolUse", event)
        except Exception as exc:
            hooks = gate.engine.selected_hooks("PostToolUse", event)
            if any(h.fails_closed("PostToolUse") for _, _, h in hooks):
                log.error(
                    "PostToolUse hooks failed for %s; withholding the result: %s", context.tool_name, exc
                )
                failed = Decision(event="PostToolUse", decision="block", reason=f"Hook error: {exc}")
                return ToolGuardrailFunctionOutput.reject_content(str(failed.blocked_tool_result))
            log.error("PostToolUse hooks failed for %s (ignored): %s", context.tool_name, exc)
            return ToolGuardrailFunctionOutput.allow()
        log_problems("PostToolUse", decision)
        text = decision.blocked_tool_result
        if decision.additional_context is not None:
            shown = (
                text
                if text is not None
                else (output if isinstance(output, str) else json.dumps(output, default=str))
            )
            text = f"{shown}\n\n{decision.additional_context}"
        if text is not None:
            return ToolGuardrailFunctionOutput.reject_content(text, decision)
        return ToolGuardrailFunctionOutput.allow(decision)

    pre: ToolInputGuardrail[Any] = ToolInputGuardrail(
        guardrail_function=judge_pre_tool_use, name="judge_pre_tool_use"
    )
    post: ToolOutputGuardrail[Any] = ToolOutputGuardrail(
        guardrail_function=judge_post_tool_use, name="judge_post_tool_use"
    )
    return pre, post


def judged_tools(
    tools: Sequence[Any], gate_or_engine: Gate | Engine, trusted: SessionFacts | None = None
) -> list[Any]:
    """``tools`` with judge's tool guardrails added to each ``FunctionTool`` (copies)."""
    pre, post = tool_guardrails(gate_or_engine, trusted)
    out: list[Any] = []
    for tool in tools:
        if isinstance(tool, FunctionTool):
            tool = dataclasses.replace(
                tool,
                tool_input_guardrails=[*(tool.tool_input_guardrails or []), pre],
                tool_output_guardrails=[*(tool.tool_output_guardrails or []), post],
            )
        out.append(tool)
    return out
