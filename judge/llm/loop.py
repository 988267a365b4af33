"""The judge's tool loop: ask, run the tools it calls, parse its verdict.

One judgement is a short conversation: a system prompt (role, answer schema, field
glossary, data-not-instructions rule), a user message holding the rendered hook prompt
(with the context between ``<hook_context>`` tags), then rounds of tool calls over the
transcript until the model answers. A verdict object that ends its answer is the verdict
(:mod:`judge.llm.verdicts`); any other answer gets one repair turn, then it is a
:class:`HookError`.

Tools and the answer schema never fight: while a tool may still be called the request
has ``tool_choice: auto`` and the answer is free text; the verdict schema (structured
output) is only sent with ``tool_choice: none`` - the repair turn, or after the round
limit - so a server that enforces it as a grammar cannot block a tool call. A tool call
the model WRITES as text (:mod:`judge.llm.written_calls`) is run like a structured one and
its result comes back as a user message; it wins over a verdict in the same reply until
the round limit. A call that repeats an earlier one is not run again, and a transcript
read in full ends the reading (:mod:`judge.llm.tools.read_log`): the next turn is the verdict.
With a transcript, a call is required (``tool_choice: required``) until the model has
read something: the judge never takes a verdict on a transcript it has not looked at.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import Executor
from dataclasses import dataclass, field

from judge.decision import Citation, Usage
from judge.errors import HookError
from judge.hooks.answers import answer_from_object
from judge.hooks.judging import PromptVerdict
from judge.llm.evidence import EvidenceCheck, reask_message, unverified_error, with_evidence
from judge.llm.instructions import (
    MAX_TOOL_ROUNDS,
    NO_MORE_TOOLS,
    NO_MORE_TOOLS_TEXT,
    REPAIR_PROMPT,
    system_prompt,
    user_prompt,
)
from judge.llm.providers.base import Completion, Message, Provider, ToolChoice
from judge.llm.retry import call_with_retries
from judge.llm.tool_rounds import nudge, run_tools, supplied_read, text_tool_round, tool_results
from judge.llm.tools import TranscriptTools
from judge.llm.tools.read_log import DECIDE, ReadLog
from judge.llm.verdicts import Verdict, cut_off, find_verdict_object
from judge.llm.written_calls import TextToolCall, find_text_tool_calls

__all__ = ["MAX_TOOL_ROUNDS", "JudgementTrace", "run_judgement"]


@dataclass
class JudgementTrace:
    """What happened during one judgement (for benchmarks and tests).

    ``tool_calls`` lists the tools run, in order, as ``"ReadFile"`` for a structured
    call, ``"text:ReadFile"`` for a call the model wrote as text and ``"judge:ReadFile"``
    for the read the judge made itself for a model that would not read (evidence first); ``verdict`` is set
    when the judgement ended with a parsed verdict (it did not if it raised).
    """

    tool_calls: list[str] = field(default_factory=list)
    requests: int = 0
    repaired: bool = False
    #: the model answered before reading (a server that enforced no required call) and was
    #: sent back to read
    asked_to_read: bool = False
    verdict: bool | None = None
    #: ``evidence: required``: re-asks for a rejection's evidence, citation problems found
    evidence_reasks: int = 0
    citation_problems: int = 0
    #: the tokens of every answered request so far (a judgement that fails still spent them);
    #: plain numbers, so an observer can write the trace as JSON
    input_tokens: int = 0
    output_tokens: int = 0


class _Conversation:
    """One judgement's state: the messages so far, the rounds of tool calls, and which turn
    comes next (a tool round, the request to read, the verdict turn, a repair)."""

    def __init__(
        self,
        provider: Provider,
        rendered_prompt: str,
        tools: TranscriptTools | None,
        deadline: float,
        *,
        max_tool_rounds: int,
        text_tools: bool,
        trace: JudgementTrace,
        executor: Executor | None,
        evidence_first: bool,
        evidence: EvidenceCheck | None,
    ) -> None:
        self.provider, self.tools, self.deadline = provider, tools, deadline
        self.max_tool_rounds, self.text_tools, self.trace = max_tool_rounds, text_tools, trace
        self.executor, self.evidence_first, self.evidence = executor, evidence_first, evidence
        system = system_prompt(tools is not None, max_tool_rounds, text_tools=text_tools)
        self.messages = [
            Message("system", system + (evidence.instructions if evidence is not None else "")),
            Message("user", user_prompt(rendered_prompt)),
        ]
        self.specs = tools.specs() if tools is not None else []
        self.usage = Usage()
        self.rounds = 0
        self.repaired = False
        self.final_turn = False
        self.supplied = False
        self.log = ReadLog()

    def may_call_tools(self) -> bool:
        return self.tools is not None and self.rounds < self.max_tool_rounds and not self.final_turn

    def unread(self) -> bool:
        """Evidence first: nothing of the transcript was read yet (nor handed over)."""
        return (
            self.tools is not None and self.evidence_first and not self.log.has_read() and not self.supplied
        )

    async def ask(self) -> Completion:
        # Tools and the answer schema never share a request: while a tool may be called,
        # the answer is free text (providers send the verdict schema only with "none").
        choice: ToolChoice = "auto" if self.rounds < self.max_tool_rounds and not self.final_turn else "none"
        if choice == "auto" and self.unread():
            choice = "required"  # evidence first: a call is enforced (where the server can) until a read

        async def attempt(remaining: float) -> Completion:
            return await self.provider.complete(
                self.messages, self.specs, tool_choice=choice, timeout=remaining
            )

        completion = await call_with_retries(attempt, self.deadline)
        self.trace.requests += 1
        self.usage = self.usage + completion.usage
        self.trace.input_tokens, self.trace.output_tokens = self.usage.input_tokens, self.usage.output_tokens
        return completion

    async def tool_round(self, completion: Completion) -> None:
        """Structured tool calls: run them (when still allowed) and hand back the results."""
        self.messages.append(Message("assistant", completion.text, completion.tool_calls))
        if self.may_call_tools() and self.tools is not None:
            calls = completion.tool_calls
            outputs = await run_tools(
                self.tools, [(c.name, c.arguments) for c in calls], self.executor, self.log
            )
            results, self.final_turn = tool_results(outputs, self.log)
            if self.final_turn or self.rounds + 1 >= self.max_tool_rounds:  # the verdict turn is next
                results[-1] += "\n\n" + DECIDE
            ran = zip(calls, outputs, strict=True)
            self.trace.tool_calls.extend(c.name for c, out in ran if out is not None)
            self.rounds += 1
        else:
            if self.repaired:
                raise HookError("the judge kept calling tools instead of answering")
            self.repaired = self.trace.repaired = self.final_turn = True
            results = [NO_MORE_TOOLS] * len(completion.tool_calls)
        for call, result in zip(completion.tool_calls, results, strict=True):
            self.messages.append(Message("tool", result, tool_call_id=call.id, name=call.name))

    def written_calls(self, completion: Completion) -> list[TextToolCall]:
        if not self.text_tools or self.tools is None:
            return []
        return find_text_tool_calls(completion.text, self.specs)

    async def text_round(self, completion: Completion, written: list[TextToolCall]) -> None:
        """Tool calls written as text (they win over a verdict in the same reply)."""
        assert self.tools is not None
        self.messages.append(Message("assistant", completion.text))
        last = self.rounds + 1 >= self.max_tool_rounds
        answer, self.final_turn = await text_tool_round(
            self.tools, written, self.trace, self.executor, self.log, last
        )
        self.messages.append(Message("user", answer))
        self.rounds += 1

    async def read_first(self) -> None:
        """An answer (or a plan) before anything was read - no call, or only calls that
        failed - is dropped (kept, a small model repeats it word for word after reading)
        and the model is asked to read, with the call to make; a second one, or one at the
        round limit, gets the transcript's first lines read by the judge itself, so no
        verdict on a transcript rests on nothing read."""
        tools = self.tools
        assert tools is not None
        if not self.trace.asked_to_read and not self.final_turn and self.rounds < self.max_tool_rounds:
            self.trace.asked_to_read = True
            self.messages.append(Message("user", nudge(tools, self.text_tools)))
            return
        self.supplied = True
        shown, done = await supplied_read(tools, self.trace, self.executor, self.log)
        if not done and self.rounds + 1 >= self.max_tool_rounds:
            shown += "\n\n" + DECIDE  # (a full read says so already)
        self.final_turn = self.final_turn or done
        if self.messages[-1].content == nudge(tools, self.text_tools):
            self.messages.pop()  # the unheeded request to read gives way to the lines
        self.messages.append(Message("user", shown))
        self.rounds += 1

    def verdict_in(self, completion: Completion) -> Verdict | None:
        verdict = find_verdict_object(completion.text)
        if verdict is None and (self.final_turn or self.tools is None):
            verdict = cut_off(completion.text)  # a schema turn ran into the cap
        return verdict

    async def checked(self, completion: Completion, verdict: Verdict) -> PromptVerdict | None:
        """The verdict, its evidence checked where required (None: re-asked for evidence)."""
        ok, reason, verdict_object = verdict
        citations: list[Citation] | None = None
        evidence = self.evidence
        if evidence is not None and evidence.needed(ok, reason):
            loop = asyncio.get_running_loop()
            review = await loop.run_in_executor(self.executor, evidence.review, verdict_object)
            self.trace.citation_problems = evidence.failed
            if not review.verified:
                if evidence.reasked:
                    raise unverified_error(review, self.usage)
                evidence.reasked = True
                self.trace.evidence_reasks += 1
                self.messages.append(Message("assistant", completion.text))
                self.messages.append(Message("user", reask_message(review)))
                return None
            citations, reason = review.citations, with_evidence(reason, review.citations)
        self.trace.verdict = ok
        label = self.provider.label
        impossible = bool(verdict_object) and answer_from_object(verdict_object).impossible
        return PromptVerdict(
            ok=ok, reason=reason, impossible=impossible, model=label, usage=self.usage, citations=citations
        )

    def repair(self, completion: Completion, written: list[TextToolCall]) -> None:
        """Not a verdict: one separate final verdict turn (no tool can be called, so the
        answer schema applies); a second time, the hook fails."""
        if self.repaired:
            snippet = completion.text.strip()[:200].replace("\n", "\\n")
            raise HookError(f"the judge's answer is not a verdict, even after a repair turn: {snippet!r}")
        self.repaired = self.trace.repaired = self.final_turn = True
        self.messages.append(Message("assistant", completion.text or "(empty reply)"))
        self.messages.append(Message("user", NO_MORE_TOOLS_TEXT if written else REPAIR_PROMPT))


async def run_judgement(
    provider: Provider,
    rendered_prompt: str,
    tools: TranscriptTools | None,
    deadline: float,
    *,
    max_tool_rounds: int = MAX_TOOL_ROUNDS,
    text_tools: bool = True,
    trace: JudgementTrace | None = None,
    executor: Executor | None = None,
    evidence_first: bool = True,
    evidence: EvidenceCheck | None = None,
) -> PromptVerdict:
    """Converse with ``provider`` until it gives a verdict (see the module docstring).

    ``evidence_first``: until something was read every request has ``tool_choice:
    required`` (a provider emulates it with a call schema where the server ignores it); an
    answer given before anything was read all the same is dropped and the model asked to
    read (with the call to make); after a second one the judge reads the first lines
    itself and hands them over.
    ``evidence``: rejections must cite the transcript (:mod:`judge.llm.evidence`).

    Tool calls run on ``executor`` (the judgement's own threads; default: the loop's).
    """
    talk = _Conversation(
        provider,
        rendered_prompt,
        tools,
        deadline,
        max_tool_rounds=max_tool_rounds,
        text_tools=text_tools,
        trace=JudgementTrace() if trace is None else trace,
        executor=executor,
        evidence_first=evidence_first,
        evidence=evidence,
    )
    while True:
        completion = await talk.ask()
        if completion.tool_calls:
            await talk.tool_round(completion)
            continue
        written = talk.written_calls(completion)
        if written and talk.may_call_tools():
            await talk.text_round(completion, written)
            continue
        if talk.unread():
            await talk.read_first()
            continue
        verdict = talk.verdict_in(completion)
        if verdict is not None:
            found = await talk.checked(completion, verdict)
            if found is not None:
                return found
            continue
        talk.repair(completion, written)
