"""Stop sequences for local servers: a small model's run of blank lines ends the answer
instead of running to the token limit. Through the real openai / anthropic SDKs against
the local test server, which cuts its text at the request's stop sequences as real
servers do (no network)."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from judge.config import Hook
from judge.hooks.judging import PromptRequest
from judge.llm import LLMJudge
from judge.llm.providers.base import Message
from judge.llm.providers.features import STOP_SEQUENCES
from judge.testing import LLMServer, fail, say, verdict
from judge.testing.llm_replies import Reply, cut_at_stop

FORMATS = ["openai", "anthropic"]
STOP_FIELD = {"openai": "stop", "anthropic": "stop_sequences"}
RAMBLE = '```json\n{"ok": false, "reason": "The tests were not run."}\n```' + "\n" * 400

for _sdk in FORMATS:
    importlib.import_module(_sdk)


def request() -> PromptRequest:
    hook = Hook(type="prompt", prompt="Did the agent run the tests? $ARGUMENTS", timeout=20)
    return PromptRequest(hook=hook, context={"hook_event_name": "Stop", "final_output": "Done."})


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_local_server_is_asked_to_stop_at_blank_lines(llm_server: LLMServer, fmt: str) -> None:
    llm_server.push(say(RAMBLE))
    result = await LLMJudge(env=llm_server.env(fmt)).evaluate(request())
    assert (result.ok, result.reason) == (False, "The tests were not run.")
    (sent,) = llm_server.requests
    assert sent.body[STOP_FIELD[fmt]] == ["\n\n\n\n"]


@pytest.mark.parametrize(
    ("fmt", "message"),
    [
        ("openai", "Unsupported parameter: 'stop' is not supported with this model."),
        ("anthropic", "stop_sequences: each stop sequence must contain non-whitespace characters"),
    ],
)
async def test_a_server_that_rejects_stop_sequences_is_asked_without(
    llm_server: LLMServer, fmt: str, message: str
) -> None:
    llm_server.push(fail(400, message), verdict(True), verdict(True))
    judge = LLMJudge(env=llm_server.env(fmt))
    assert (await judge.evaluate(request())).ok is True
    assert (await judge.evaluate(request())).ok is True
    rejected, *after = llm_server.requests
    assert STOP_FIELD[fmt] in rejected.body
    assert len(after) == 2 and all(STOP_FIELD[fmt] not in r.body for r in after)  # learned once


def body(fmt: str, base_url: str | None) -> dict[str, Any]:
    """The request body of a plain turn (no tools) to ``base_url`` (no request is made)."""
    from judge.llm.providers.anthropic import AnthropicProvider
    from judge.llm.providers.openai import OpenAIProvider

    env = {"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}
    if base_url is not None:
        env[f"{fmt.upper()}_BASE_URL"] = base_url
    provider = OpenAIProvider("m", env) if fmt == "openai" else AnthropicProvider("m", env)
    return provider.body([Message(role="user", content="hi")], [], "auto")


@pytest.mark.parametrize("fmt", FORMATS)
def test_hosted_apis_get_no_stop_sequences(fmt: str) -> None:
    assert STOP_FIELD[fmt] not in body(fmt, None)
    assert STOP_FIELD[fmt] not in body(fmt, "https://gateway.example.com/v1")
    assert body(fmt, "http://192.168.1.20:8080/v1")[STOP_FIELD[fmt]] == list(STOP_SEQUENCES)
    assert body(fmt, "http://localhost:11434/v1")[STOP_FIELD[fmt]] == list(STOP_SEQUENCES)


async def test_the_test_server_cuts_at_a_stop_sequence_like_a_real_one(llm_server: LLMServer) -> None:
    import anthropic
    import openai

    llm_server.push(*[say("first\nEND\nsecond")] * 4)
    chat = openai.AsyncOpenAI(base_url=llm_server.openai_base_url, api_key="test-key").chat.completions
    messages: Any = [{"role": "user", "content": "hi"}]
    cut = await chat.create(model="m", messages=messages, stop=["END"])
    whole = await chat.create(model="m", messages=messages)
    assert cut.choices[0].message.content == "first\n"
    assert whole.choices[0].message.content == "first\nEND\nsecond"
    claude = anthropic.AsyncAnthropic(base_url=llm_server.anthropic_base_url, api_key="test-key").messages
    cut2 = await claude.create(model="m", max_tokens=9, messages=messages, stop_sequences=["END"])
    whole2 = await claude.create(model="m", max_tokens=9, messages=messages)
    assert (cut2.stop_reason, cut2.stop_sequence, cut2.content[0].text) == ("stop_sequence", "END", "first\n")
    assert (whole2.stop_reason, whole2.content[0].text) == ("end_turn", "first\nEND\nsecond")


def test_cut_at_stop_takes_the_earliest_sequence() -> None:
    reply = Reply(text="a-b+c")
    assert cut_at_stop(reply, {"stop": ["+", "-"]}).text == "a"
    assert cut_at_stop(reply, {"stop": "+"}).text == "a-b"
    assert cut_at_stop(reply, {"stop_sequences": ["x"]}) is reply
    assert cut_at_stop(reply, {}) is reply
    assert cut_at_stop(Reply(text=None), {"stop": ["+"]}).text is None
