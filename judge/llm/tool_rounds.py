"""One round of the judge's tool calls: run them on the judgement's threads (a repeated call is
not run again), and build what the model sees next — each result between data tags, the
note that the transcript was read in full, the read the judge makes itself for a model
that will not read (evidence first), and the results of calls the model wrote as text.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any

from judge.llm.instructions import NUDGE_TEXT_TOOLS, NUDGE_TOOLS, SUPPLIED, tool_result
from judge.llm.tools import TranscriptTools
from judge.llm.tools.read_file import DEFAULT_WINDOW
from judge.llm.tools.read_log import ALL_READ, DECIDE, REPEATED, ReadLog
from judge.llm.written_calls import RESULTS_FOOTER, TextToolCall, results_message

if TYPE_CHECKING:
    from judge.llm.loop import JudgementTrace


async def run_tools(
    tools: TranscriptTools,
    calls: Sequence[tuple[str, dict[str, Any] | None]],
    executor: Executor | None,
    log: ReadLog,
) -> list[str | None]:
    """Each call's output, or None for a call that repeats an earlier one (not run)."""
    loop = asyncio.get_running_loop()
    fresh = [i for i, (name, args) in enumerate(calls) if not log.is_repeat(name, args)]
    runs = (loop.run_in_executor(executor, tools.call, *calls[i]) for i in fresh)
    outputs: list[str | None] = [None] * len(calls)
    for i, output in zip(fresh, await asyncio.gather(*runs), strict=True):
        log.record(*calls[i], output)
        outputs[i] = output
    return outputs


def tool_results(outputs: list[str | None], log: ReadLog) -> tuple[list[str], bool]:
    """The tool results the model sees, and whether to ask for the verdict next.

    Calls that were all repeats, or a transcript now read in full, end the reading: the
    last result then says so, and the next request is the final (schema) turn. The
    caller ends such results with :data:`DECIDE`.
    """
    results = [REPEATED if output is None else tool_result(output) for output in outputs]
    lines = log.all_read()
    if lines is not None:
        results[-1] += "\n\n" + ALL_READ.format(lines=lines)
    return results, lines is not None or all(output is None for output in outputs)


def _first_call(tools: TranscriptTools | None) -> str | None:
    """The ReadFile call of the transcript's first 100 lines, written as text."""
    if tools is None:
        return None
    arguments = {"filePath": str(tools.path), "startLine": 1, "endLine": 100}
    return json.dumps({"name": "ReadFile", "arguments": arguments})


def nudge(tools: TranscriptTools, text_tools: bool) -> str:
    call = _first_call(tools)
    return NUDGE_TEXT_TOOLS.format(call=call) if text_tools and call else NUDGE_TOOLS


async def supplied_read(
    tools: TranscriptTools, trace: JudgementTrace, executor: Executor | None, log: ReadLog
) -> tuple[str, bool]:
    """The transcript's first window, read by the judge for a model that would not read
    it: the user message, and whether that was all of it (then the verdict is next)."""
    arguments: dict[str, Any] = {"filePath": str(tools.path), "startLine": 1, "endLine": DEFAULT_WINDOW}
    outputs = await run_tools(tools, [("ReadFile", arguments)], executor, log)
    (shown,), done = tool_results(outputs, log)
    trace.tool_calls.append("judge:ReadFile")
    message = SUPPLIED.format(result=shown)
    return (message + "\n\n" + DECIDE if done else message), done


async def text_tool_round(
    tools: TranscriptTools,
    calls: list[TextToolCall],
    trace: JudgementTrace,
    executor: Executor | None,
    log: ReadLog,
    last: bool = False,
) -> tuple[str, bool]:
    """Run the valid text tool calls: the user message holding every call's result, and
    whether to ask for the verdict next (see :func:`tool_results`; ``last``: the round limit
    is reached, so the verdict is next anyway)."""
    runnable = [c for c in calls if c.error is None]
    outputs = await run_tools(tools, [(c.name, c.arguments) for c in runnable], executor, log)
    ran = zip(runnable, outputs, strict=True)
    trace.tool_calls.extend(f"text:{c.name}" for c, out in ran if out is not None)
    shown, done = tool_results(outputs, log) if runnable else ([], False)
    answers = iter(shown)
    results = [f"Error: {c.error}" if c.error is not None else next(answers) for c in calls]
    return results_message(calls, results, DECIDE if done or last else RESULTS_FOOTER), done
