"""judge in LangChain v1 agents, with the real packages against the local model server."""

from __future__ import annotations

import re
from collections import deque
from typing import Any

import httpx
import pytest

pytest.importorskip(
    "langchain.agents.middleware", reason="LangChain 1.x is not installed (pip install 'judge[langchain]')"
)
langchain_openai = pytest.importorskip("langchain_openai", reason="langchain-openai is not installed")

from langchain.agents import create_agent  # noqa: E402
from langchain.messages import HumanMessage, ToolMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402

from judge import Engine, Gate, SessionFacts, config_from_data  # noqa: E402
from judge.integrations.langchain import JudgeMiddleware  # noqa: E402
from judge.testing import LLMRequest, LLMServer, Reply, call, say, verdict  # noqa: E402

AGENT_MODEL, JUDGE_MODEL = "agent-model", "judge-test"
RAN: list[str] = []


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
    RAN.clear()
    return llm_server


def model(server: LLMServer) -> Any:
    # Its own HTTP client: langchain-openai shares one per base URL, bound to the event loop
    # of the test that made it.
    return langchain_openai.ChatOpenAI(
        model=AGENT_MODEL,
        base_url=server.openai_base_url,
        api_key="test-key",
        use_responses_api=False,
        max_retries=0,
        http_async_client=httpx.AsyncClient(),
    )


@tool
def search_faq(query: str) -> str:
    """Search the FAQ."""
    RAN.append(f"search_faq({query})")
    return "INTERNAL note for O-1042" if "account" in query else "FAQ-12: refunds take 5 business days."


@tool
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
REWRITE_ORDER = """#!/usr/bin/env python3
import json, sys
c = json.load(sys.stdin)
rewrite = {"hookEventName": "PreToolUse", "updatedInput": {"order": c["tool_input"]["order"].upper()}}
print(json.dumps({"decision": "approve", "hookSpecificOutput": rewrite}))
"""
WITHHOLD_INTERNAL = """#!/usr/bin/env python3
import json, sys
c = json.load(sys.stdin)
context = {"decision": "approve", "hookSpecificOutput": {"additionalContext": "Cite the FAQ id."}}
blocked = {"decision": "block", "reason": "internal notes"}
print(json.dumps(blocked if "INTERNAL" in str(c["tool_result"]) else context))
"""


def gate(hooks: dict[str, Any]) -> Gate:
    return Gate(Engine(config_from_data({"hooks": hooks})))


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
async def test_an_answer_judge_rejects_jumps_back_to_the_model_with_the_reason(
    server: LLMServer, mode: str
) -> None:
    script = Script(
        [
            call("search_faq", query="refund time"),
            say("Refunds take 5 business days."),
            say("Refunds take 5 business days (FAQ-12). Task complete."),
        ],
        [verdict(False, 'Cite FAQ-12 and end with "Task complete."')],
    )
    server.handler = script
    agent = create_agent(
        model(server), [search_faq], middleware=[JudgeMiddleware(gate({"Stop": [STOP_HOOK]}))]
    )
    question = {"messages": [HumanMessage("How long do refunds take?")]}
    state = agent.invoke(question) if mode == "invoke" else await agent.ainvoke(question)
    messages = state["messages"]
    assert messages[-1].text == "Refunds take 5 business days (FAQ-12). Task complete."
    assert messages[-2].type == "human" and 'Cite FAQ-12 and end with "Task complete."' in messages[-2].text
    asked = [r for r in server.requests if r.model == AGENT_MODEL]
    assert len(asked) == 3 and RAN == ["search_faq(refund time)"]
    read = script.read[0]  # the conversation, readable: the call and its result
    assert "TOOL CALL search_faq" in read and "TOOL RESULT" in read and "FAQ-12: refunds take 5" in read


def test_a_judge_that_never_accepts_ends_the_run_at_max_rejections(server: LLMServer) -> None:
    server.handler = Script([say(f"answer {n}") for n in range(1, 6)])
    always = {
        "type": "prompt",
        "model": "fake:block:still wrong",
        "maxRejections": 2,
        "prompt": "ok? $ARGUMENTS",
    }
    agent = create_agent(model(server), [], middleware=[JudgeMiddleware(gate({"Stop": [always]}))])
    state = agent.invoke({"messages": [HumanMessage("hi")]})
    assert state["messages"][-1].text == "answer 2" and len(server.requests) == 2


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
async def test_tool_calls_are_denied_rewritten_withheld_and_given_context(
    server: LLMServer, mode: str
) -> None:
    server.handler = Script(
        [
            call("prepare_case_file", order="o-1042"),
            call("search_faq", query="account O-1042"),
            call("search_faq", query="refund time"),
            say("done"),
        ]
    )
    facts = SessionFacts(user_id="u-17", tier="free", session_id="conv-42")
    hooks = {
        "PreToolUse": [{"type": "command", "matcher": "prepare_case_file", "script": DENY_FREE_TIER}],
        "PostToolUse": [{"type": "command", "matcher": "search_faq", "script": WITHHOLD_INTERNAL}],
    }
    agent = create_agent(
        model(server), [search_faq, prepare_case_file], middleware=[JudgeMiddleware(gate(hooks), facts)]
    )
    question = {"messages": [HumanMessage("open a case")]}
    state = agent.invoke(question) if mode == "invoke" else await agent.ainvoke(question)
    results = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert RAN == ["search_faq(account O-1042)", "search_faq(refund time)"]
    assert (results[0].content, results[0].status) == ("BLOCKED: free tier cannot open cases", "error")
    assert results[1].content == "[Hook Blocked Tool Result] internal notes"
    assert [b["text"] for b in results[2].content] == [
        "FAQ-12: refunds take 5 business days.",
        "Cite the FAQ id.",
    ]


def test_a_rewritten_call_runs_as_the_policy_says(server: LLMServer) -> None:
    server.handler = Script([call("prepare_case_file", order="o-7"), say("done")])
    hooks = {"PreToolUse": [{"type": "command", "matcher": "prepare_case_file", "script": REWRITE_ORDER}]}
    agent = create_agent(
        model(server), [prepare_case_file], middleware=[JudgeMiddleware(gate(hooks), stop=False)]
    )
    agent.invoke({"messages": [HumanMessage("open a case")]})
    assert RAN == ["prepare_case_file(O-7)"]


def test_two_judges_in_one_agent_need_names(server: LLMServer) -> None:
    first = JudgeMiddleware(gate({}), tools=False)
    second = JudgeMiddleware(gate({}), stop=False, name="JudgeTools")
    agent = create_agent(model(server), [search_faq], middleware=[first, second])
    assert agent is not None and {first.name, second.name} == {"JudgeMiddleware", "JudgeTools"}
