"""The structured outputs a provider sends: the verdict's reason limited on local servers
(a small model otherwise rambles up to the answer cap), the limit dropped where a server
rejects it, and a verdict-or-call schema on the free turns of a server that ignores
``tool_choice``. Through the real openai / anthropic SDKs against the local test server."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from judge.config import Hook
from judge.errors import HookError
from judge.hooks.judging import PromptRequest
from judge.llm import JudgementTrace, LLMJudge
from judge.llm.providers.schemas import DEFAULT_REASON_CHARS, LIMITED_CITATIONS, local_server, reason_limit
from judge.llm.written_calls import RESULTS_HEADER
from judge.testing import LLMRequest, LLMServer, fail, say, verdict

FORMATS = ["openai", "anthropic"]

for _sdk in FORMATS:
    importlib.import_module(_sdk)


@pytest.fixture
def server(llm_server: LLMServer) -> LLMServer:
    return llm_server  # (tests/conftest.py: reset for each test)


def judge(server: LLMServer, fmt: str, traces: list[JudgementTrace] | None = None, **env: str) -> LLMJudge:
    seen = [] if traces is None else traces
    return LLMJudge(env={**server.env(fmt), **env}, observer=lambda _request, trace: seen.append(trace))


def request_for(transcript: Path | None = None) -> PromptRequest:
    context: dict[str, Any] = {"hook_event_name": "Stop", "final_output": "All tests pass."}
    if transcript is not None:
        context["execution_summary"] = str(transcript)
    hook = Hook(type="prompt", prompt="Is the answer complete? $ARGUMENTS", timeout=20)
    return PromptRequest(hook=hook, context=context, transcript_path=transcript)


def schema_of(fmt: str, body: dict[str, Any]) -> dict[str, Any] | None:
    if fmt == "openai":
        return body["response_format"]["json_schema"]["schema"] if "response_format" in body else None
    return body["output_config"]["format"]["schema"] if "output_config" in body else None


def shapes(schema: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The verdict shapes of a schema: the allow and block shapes of a limited one, else itself."""
    assert schema is not None
    return [s for s in schema.get("anyOf", [schema]) if "ok" in s["properties"]]


def block_shape(schema: dict[str, Any] | None) -> dict[str, Any]:
    return next(s for s in shapes(schema) if "reason" in s["properties"])


def reason_max(schema: dict[str, Any] | None) -> int | None:
    return block_shape(schema)["properties"]["reason"].get("maxLength")


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://127.0.0.1:8089/v1", True),
        ("http://localhost:11434/v1", True),
        ("http://[::1]:8000/v1", True),
        ("http://192.168.1.20:8000/v1", True),
        ("http://10.0.0.7/v1", True),
        ("http://gpu-box.local:8000/v1", True),
        ("https://api.openai.com/v1", False),
        ("https://api.anthropic.com", False),
        ("https://8.8.8.8/v1", False),
        (None, False),
        ("", False),
    ],
)
def test_a_local_server_is_told_from_a_hosted_api(url, local):
    assert local_server(url) is local
    assert reason_limit({}, url) == (DEFAULT_REASON_CHARS if local else None)


def test_the_reason_limit_can_be_set_or_switched_off():
    assert reason_limit({"JUDGE_MAX_REASON_CHARS": "0"}, "http://127.0.0.1:1/v1") is None
    assert reason_limit({"JUDGE_MAX_REASON_CHARS": "250"}, "https://api.openai.com/v1") == 250
    for bad in ("lots", "-5", "10"):
        with pytest.raises(HookError, match=rf"JUDGE_MAX_REASON_CHARS must be 0 .*'{bad}'"):
            reason_limit({"JUDGE_MAX_REASON_CHARS": bad}, None)


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_local_server_gets_the_reason_limited(server, fmt):
    await judge(server, fmt).evaluate(request_for())
    await judge(server, fmt, JUDGE_MAX_REASON_CHARS="120").evaluate(request_for())
    await judge(server, fmt, JUDGE_MAX_REASON_CHARS="0").evaluate(request_for())
    limits = [reason_max(schema_of(fmt, r.body)) for r in server.requests]
    assert limits == [DEFAULT_REASON_CHARS, 120, None]


@pytest.mark.parametrize("fmt", FORMATS)
async def test_on_a_local_server_an_allow_is_ok_true_alone_and_a_block_needs_a_reason(server, fmt):
    server.push(verdict(False, "The tests were not run."))
    blocked = await judge(server, fmt).evaluate(request_for())
    await judge(server, fmt, JUDGE_MAX_REASON_CHARS="0").evaluate(request_for())
    assert (blocked.ok, blocked.reason) == (False, "The tests were not run.")
    allow, block = shapes(schema_of(fmt, server.requests[0].body))
    assert allow["properties"] == {"ok": {**allow["properties"]["ok"], "enum": [True]}}
    assert allow["required"] == ["ok"] and allow["additionalProperties"] is False
    assert block["properties"]["ok"]["enum"] == [False]
    assert block["required"] == ["ok", "reason"]
    assert block["properties"]["reason"]["type"] == "string"
    assert block["properties"]["reason"]["minLength"] == 1
    unlimited = shapes(schema_of(fmt, server.requests[1].body))  # no limit: one shape, as on hosted APIs
    assert len(unlimited) == 1 and "enum" not in unlimited[0]["properties"]["ok"]


@pytest.mark.parametrize("fmt", FORMATS)
async def test_citations_are_bounded_like_the_reason(server, fmt):
    await judge(server, fmt, JUDGE_MAX_REASON_CHARS="150").evaluate(request_for())
    citations = block_shape(schema_of(fmt, server.requests[0].body))["properties"]["citations"]
    assert citations["maxItems"] == LIMITED_CITATIONS
    assert citations["items"]["properties"]["quote"]["maxLength"] == 150


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_server_that_rejects_the_limit_keeps_the_schema_without_it(server, fmt):
    server.push(fail(400, "Invalid schema for response_format 'verdict': 'maxLength' is not permitted."))
    server.push(verdict(False, "The tests were not run."))
    judging = judge(server, fmt)
    result = await judging.evaluate(request_for())
    assert (result.ok, result.reason) == (False, "The tests were not run.")
    rejected, retried = server.requests
    assert reason_max(schema_of(fmt, rejected.body)) == DEFAULT_REASON_CHARS
    unlimited = schema_of(fmt, retried.body)
    assert unlimited is not None and reason_max(unlimited) is None
    assert "anyOf" not in unlimited and "maxItems" not in unlimited["properties"]["citations"]
    await judging.evaluate(request_for())  # learned for the client: not sent again
    assert len(server.requests) == 3 and reason_max(schema_of(fmt, server.requests[2].body)) is None


async def test_a_server_that_rejects_the_schema_too_loses_it_after_the_limit(server):
    server.push(fail(400, "bad request"), fail(400, "bad request"), verdict(True))
    result = await judge(server, "openai").evaluate(request_for())
    assert result.ok is True
    limited, unlimited, plain = server.requests
    assert reason_max(schema_of("openai", limited.body)) == DEFAULT_REASON_CHARS
    assert reason_max(schema_of("openai", unlimited.body)) is None
    assert "response_format" not in plain.body


def transcript_file(tmp_path: Path) -> Path:
    path = tmp_path / "transcript.txt"
    path.write_text("".join(f"line {i}: step {i}\n" for i in range(1, 300)) + "ERROR: 2 tests failed\n")
    return path


def grammar_model(calls: list[dict[str, Any]]):
    """Like llama.cpp: ignores tool_choice "required", answers within any schema it is given;
    on a verdict-or-call turn it makes ``calls`` first, then blocks."""

    def answer(request: LLMRequest) -> Any:
        schema = schema_of(request.format, request.body)
        if schema is None:
            return say('{"ok": true}')  # free text: answers unread
        options = schema.get("anyOf", [schema])
        if any("ok" in o.get("properties", {}) for o in options) and RESULTS_HEADER in request.text:
            if calls:
                return say(json.dumps(calls.pop(0)))
            return verdict(False, "2 tests failed: fix them.")
        read = {"filePath": "t", "startLine": 1, "endLine": 100}
        return say(json.dumps({"name": "ReadFile", "arguments": read}))

    return answer


@pytest.mark.parametrize("fmt", FORMATS)
async def test_free_turns_on_a_grammar_server_ask_for_a_verdict_or_a_call(server, fmt, tmp_path):
    more = [{"name": "GrepSearch", "arguments": {"query": "ERROR", "isRegexp": False}}]
    server.handler = grammar_model(more)
    traces: list[JudgementTrace] = []
    result = await judge(server, fmt, traces).evaluate(request_for(transcript_file(tmp_path)))
    assert (result.ok, result.reason) == (False, "2 tests failed: fix them.")
    assert traces[0].tool_calls == ["text:ReadFile", "text:GrepSearch"]
    free = [r for r in server.requests if "anyOf" in (schema_of(fmt, r.body) or {})]
    free = [r for r in free if any("ok" in o.get("properties", {}) for o in schema_of(fmt, r.body)["anyOf"])]
    assert len(free) == 2  # after each read: a verdict or another call
    for request in free:
        options = schema_of(fmt, request.body)["anyOf"]
        assert len(shapes(schema_of(fmt, request.body))) == 2  # allow and block, flattened
        assert reason_max(schema_of(fmt, request.body)) == DEFAULT_REASON_CHARS
        names = {o["properties"]["name"]["enum"][0] for o in options if "name" in o["properties"]}
        assert names == {"ReadFile", "GrepSearch"}
        assert request.tool_names  # the tools stay offered beside the schema
    assert "ERROR: 2 tests failed" in server.requests[-1].text


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_server_that_honours_tool_choice_gets_no_schema_on_free_turns(server, fmt, tmp_path):
    from judge.testing import call

    server.push(call("ReadFile", startLine=1, endLine=100), verdict(True))
    await judge(server, fmt).evaluate(request_for(transcript_file(tmp_path)))
    forced, free = server.requests
    assert schema_of(fmt, forced.body) is None and schema_of(fmt, free.body) is None
