"""judge in the OpenAI Agents SDK, with the real package against the local model server."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator
from typing import Any

import pytest

agents = pytest.importorskip(
    "agents", reason="the OpenAI Agents SDK is not installed (pip install 'judge[openai-agents]')"
)

from agents import Agent, OpenAIChatCompletionsModel, OutputGuardrailTripwireTriggered, function_tool  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

from judge import Engine, Gate, SessionFacts, StopGate, config_from_data  # noqa: E402
from judge.integrations.openai_agents import judged_tools, run_until_judged  # noqa: E402
from judge.testing import LLMRequest, LLMServer, Reply, call, say, verdict  # noqa: E402

AGENT_MODEL, JUDGE_MODEL = "agent-model", "judge-test"
RAN: list[str] = []


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    agents.set_tracing_disabled(True)
    RAN.clear()
    yield


class Script:
    """Replies by model: the agent's in order; the judge reads the transcript first, then
    answers from its verdicts (then accepts)."""

    def __init__(self, agent: list[Reply], judge: list[Reply] | None = None) -> None:
        self.agent, self.judge = deque(agent), deque(judge or [])
        self.read: list[str] = []

    def __call__(self, request: LLMRequest) -> Reply:
        if request.model != JUDGE_MODEL:
            return self.agent.popleft() if self.agent else say("out of script")
        path = re.search(r'"execution_summary": "([^"]+)"', request.text)
        if path and not request.tool_results:
            return call("ReadFile", filePath=path.group(1), startLine=1, endLine=200)
        self.read += request.tool_results[-1:]
        return self.judge.popleft() if self.judge else verdict(True)


@pytest.fixture
def server(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> LLMServer:
    for name, value in llm_server.env("openai", JUDGE_MODEL).items():
        monkeypatch.setenv(name, value)
    return llm_server


def model(server: LLMServer) -> OpenAIChatCompletionsModel:
    client = AsyncOpenAI(base_url=server.openai_base_url, api_key="test-key", max_retries=0)
    return OpenAIChatCompletionsModel(model=AGENT_MODEL, openai_client=client)


@function_tool
def search_faq(query: str) -> str:
    """Search the FAQ."""
    RAN.append(f"search_faq({query})")
    return "INTERNAL note for O-1042" if "account" in query else "FAQ-12: refunds take 5 business days."


@function_tool
def prepare_case_file(order: str) -> str:
    """Open a case."""
    RAN.append(f"prepare_case_file({order})")
    return f"case opened for {order}"


STOP_HOOK = {
    "type": "prompt",
    "model": f"openai:{JUDGE_MODEL}",
    "maxRejections": 3,
    "prompt": 'Does the answer cite the FAQ and end with "Task complete."? $ARGUMENTS',
}


DENY_FREE_TIER = """#!/usr/bin/env python3
import json, sys
c = json.load(sys.stdin)
denied = {"decision": "block", "reason": "free tier cannot open cases"}
print(json.dumps(denied if c["trusted"]["tier"] == "free" else {"decision": "approve"}))
"""
WITHHOLD_INTERNAL = """#!/usr/bin/env python3
import json, sys
c = json.load(sys.stdin)
context = {"decision": "approve", "hookSpecificOutput": {"additionalContext": "Cite the FAQ id."}}
blocked = {"decision": "block", "reason": "internal notes"}
print(json.dumps(blocked if "INTERNAL" in str(c["tool_result"]) else context))
"""


def gate(*stop: dict[str, Any], tools: bool = False) -> Gate:
    hooks: dict[str, Any] = {"Stop": list(stop)} if stop else {}
    if tools:
        hooks["PreToolUse"] = [{"type": "command", "matcher": "prepare_case_file", "script": DENY_FREE_TIER}]
        hooks["PostToolUse"] = [{"type": "command", "matcher": "search_faq", "script": WITHHOLD_INTERNAL}]
    return Gate(Engine(config_from_data({"hooks": hooks})))


FACTS = SessionFacts(user_id="u-17", tier="free", session_id="conv-42")


async def test_an_answer_judge_rejects_is_sent_back_with_the_reason_and_the_next_returned(
    server: LLMServer,
) -> None:
    script = Script(
        [
            call("search_faq", query="refund time"),
            say("Refunds take 5 business days."),
            say("Refunds take 5 business days (FAQ-12). Task complete."),
        ],
        [verdict(False, 'The answer does not cite FAQ-12 nor end with "Task complete."')],
    )
    server.handler = script
    agent = Agent(
        name="support", instructions="Answer support questions.", model=model(server), tools=[search_faq]
    )
    result = await run_until_judged(agent, "How long do refunds take?", StopGate(gate(STOP_HOOK), FACTS))
    assert result.final_output == "Refunds take 5 business days (FAQ-12). Task complete."
    asked = [r for r in server.requests if r.model == AGENT_MODEL]
    assert len(asked) == 3 and RAN == ["search_faq(refund time)"]
    last = asked[2].messages
    assert (
        last[-1]["role"] == "user"
        and 'does not cite FAQ-12 nor end with "Task complete."' in last[-1]["content"]
    )
    assert any(
        m.get("role") == "assistant" and m.get("content") == "Refunds take 5 business days." for m in last
    )
    first_read = script.read[0]  # the judge read this run's tool call and result, readably
    assert "TOOL CALL search_faq" in first_read and "FAQ-12: refunds take 5 business days." in first_read
    assert "SYSTEM: Answer support questions." in first_read


async def test_a_judge_that_never_accepts_ends_the_loop_at_max_rejections(server: LLMServer) -> None:
    server.handler = Script([say(f"answer {n}") for n in range(1, 6)])
    always = {
        "type": "prompt",
        "model": "fake:block:still wrong",
        "maxRejections": 2,
        "prompt": "ok? $ARGUMENTS",
    }
    agent = Agent(name="support", instructions="Answer.", model=model(server))
    result = await run_until_judged(agent, "hi", StopGate(gate(always), FACTS))
    assert result.final_output == "answer 2"
    (checked,) = result.output_guardrail_results
    assert checked.output.output_info.forced and checked.output.output_info.reason == "still wrong"


async def test_stop_hooks_that_never_force_a_stop_end_at_max_attempts(server: LLMServer) -> None:
    server.handler = Script([say(f"answer {n}") for n in range(1, 6)])
    block = {"type": "command", "command": 'echo \'{"decision": "block", "reason": "again"}\''}
    agent = Agent(name="support", instructions="Answer.", model=model(server))
    with pytest.raises(OutputGuardrailTripwireTriggered) as raised:
        await run_until_judged(agent, "hi", StopGate(gate(block), FACTS), max_attempts=2)
    assert raised.value.guardrail_result.output.output_info.reason == "again"
    assert len(server.requests) == 2


async def test_tool_guardrails_deny_withhold_and_add_context(server: LLMServer) -> None:
    server.handler = Script(
        [
            call("prepare_case_file", order="O-1042"),
            call("search_faq", query="account O-1042"),
            call("search_faq", query="refund time"),
            say("done"),
        ]
    )
    tools = judged_tools([search_faq, prepare_case_file], gate(tools=True), FACTS)
    agent = Agent(name="support", instructions="Help.", model=model(server), tools=tools)
    result = await agents.Runner.run(agent, "open a case for O-1042")
    assert result.final_output == "done"
    assert RAN == ["search_faq(account O-1042)", "search_faq(refund time)"]  # the case file never opened
    results = [m["content"] for m in server.requests[-1].messages if m.get("role") == "tool"]
    assert results[0] == "BLOCKED: free tier cannot open cases"
    assert results[1] == "[Hook Blocked Tool Result] internal notes"
    assert results[2] == "FAQ-12: refunds take 5 business days.\n\nCite the FAQ id."
    assert search_faq.tool_input_guardrails in (None, [])  # the caller's tools are left as they are


async def test_a_policy_check_that_raises_denies_the_call(server: LLMServer) -> None:
    class Broken(Gate):
        async def decide(self, event: str, context: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
            if event == "PreToolUse":
                raise RuntimeError("state unavailable")
            return await super().decide(event, context, *args, **kwargs)

    server.handler = Script([call("prepare_case_file", order="O-1"), say("done")])
    tools = judged_tools([prepare_case_file], Broken(Engine(config_from_data({"hooks": {}}))), FACTS)
    agent = Agent(name="support", instructions="Help.", model=model(server), tools=tools)
    await agents.Runner.run(agent, "open a case")
    assert RAN == []
    (result,) = [m["content"] for m in server.requests[-1].messages if m.get("role") == "tool"]
    assert result == "BLOCKED: the policy check for this tool failed (state unavailable)"


async def test_the_loop_refuses_history_kept_elsewhere(server: LLMServer) -> None:
    agent = Agent(name="support", instructions="Answer.", model=model(server))
    with pytest.raises(TypeError, match="conversation_id"):
        await run_until_judged(agent, "hi", StopGate(gate(STOP_HOOK), FACTS), conversation_id="c1")
    assert server.requests == []
