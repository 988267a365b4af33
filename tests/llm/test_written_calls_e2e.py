"""Text tool calls, the evidence-first nudge, the answer schema kept apart from tools, and
servers that reject a feature: through the real openai / anthropic SDKs against the local
test server (no network)."""

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
from judge.llm.instructions import NO_MORE_TOOLS_TEXT, NUDGE_TOOLS, SUPPLIED
from judge.llm.tools.read_log import DECIDE
from judge.llm.written_calls import RESULTS_HEADER
from judge.testing import LLMRequest, LLMServer, call, fail, say, verdict

FORMATS = ["openai", "anthropic"]
SCHEMA_FIELD = {"openai": "response_format", "anthropic": "output_config"}

for _sdk in FORMATS:
    importlib.import_module(_sdk)


@pytest.fixture
def server(llm_server: LLMServer) -> LLMServer:
    return llm_server  # (tests/conftest.py: reset for each test)


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "transcript.txt"
    lines = [f"line {i}: agent step {i}" for i in range(1, 61)]
    lines[41] = "line 42: ERROR tests failed: 2 failed, 10 passed"
    path.write_text("\n".join(lines) + "\n")
    return path


def request_for(transcript: Path | None) -> PromptRequest:
    context: dict[str, Any] = {"hook_event_name": "Stop", "final_output": "All tests pass."}
    if transcript is not None:
        context["execution_summary"] = str(transcript)
    hook = Hook(type="prompt", prompt="Check the answer against the transcript. $ARGUMENTS", timeout=20)
    return PromptRequest(hook=hook, context=context, transcript_path=transcript)


def judge(server: LLMServer, fmt: str, traces: list[JudgementTrace], **kwargs: Any) -> LLMJudge:
    env = {**server.env(fmt), **kwargs.pop("env", {})}
    return LLMJudge(env=env, observer=lambda _request, trace: traces.append(trace), **kwargs)


def last_user_text(request: LLMRequest) -> str:
    content = request.messages[-1]["content"]
    if isinstance(content, list):
        return "\n".join(str(block.get("text") or block.get("content") or "") for block in content)
    return str(content)


def written(name: str, **arguments: Any) -> str:
    return json.dumps({"name": name, "arguments": arguments})


def forced_tool_choice(fmt: str, body: dict[str, Any]) -> bool:
    """Whether the request carries tool_choice "required" (Anthropic: "any")."""
    return body.get("tool_choice") in ("required", {"type": "any"})


def schema_name(fmt: str, body: dict[str, Any]) -> str | None:
    """Which structured output the request asks for: "verdict", "tool_call",
    "verdict_or_tool_call" or None."""
    if fmt == "openai":
        return body["response_format"]["json_schema"]["name"] if "response_format" in body else None
    if "output_config" not in body:
        return None
    options = body["output_config"]["format"]["schema"]
    options = options.get("anyOf", [options])  # a verdict on a local server: allow or block
    verdicts = any("ok" in o["properties"] for o in options)
    calls = any("arguments" in o["properties"] for o in options)
    return "verdict_or_tool_call" if verdicts and calls else ("verdict" if verdicts else "tool_call")


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_fenced_text_call_is_run_and_its_result_sent_back(server, fmt, transcript):
    read_call = written("ReadFile", filePath=str(transcript), startLine=40, endLine=43)
    server.push(
        say(f"I need it.\n```json\n{read_call}\n```"),
        verdict(False, "Line 42 shows 2 failed tests; fix them."),
    )
    traces: list[JudgementTrace] = []
    result = await judge(server, fmt, traces).evaluate(request_for(transcript))
    assert (result.ok, result.reason) == (False, "Line 42 shows 2 failed tests; fix them.")
    first, second = server.requests
    assert first.messages[-1]["role"] == "user"
    sent = last_user_text(second)
    assert sent.startswith(RESULTS_HEADER)
    assert "[1] ReadFile" in sent and "    42\tline 42: ERROR tests failed" in sent
    assert "<transcript_data>" in sent and "    44\t" not in sent
    assert second.messages[-2]["role"] == "assistant"  # the written call stays in the conversation
    assert traces[0].tool_calls == ["text:ReadFile"] and traces[0].verdict is False


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_tagged_call_wins_over_a_verdict_in_the_same_reply(server, fmt, transcript):
    server.push(
        say(f'<tool_call>{written("GrepSearch", query="failed", isRegexp=False)}</tool_call>{{"ok": true}}'),
        verdict(False, "2 tests failed."),
    )
    traces: list[JudgementTrace] = []
    result = await judge(server, fmt, traces).evaluate(request_for(transcript))
    assert result.ok is False and len(server.requests) == 2
    assert "42: line 42: ERROR tests failed" in last_user_text(server.requests[1])
    assert traces[0].tool_calls == ["text:GrepSearch"]


@pytest.mark.parametrize("fmt", FORMATS)
async def test_at_the_round_limit_the_verdict_beside_a_call_counts(server, fmt, transcript):
    grep = written("GrepSearch", query="failed", isRegexp=False)
    server.push(say(grep), say(f'{grep}\n{{"ok": false, "reason": "Tests failed."}}'))
    traces: list[JudgementTrace] = []
    result = await judge(server, fmt, traces, max_tool_rounds=1).evaluate(request_for(transcript))
    assert (result.ok, result.reason) == (False, "Tests failed.")
    assert len(server.requests) == 2 and traces[0].tool_calls == ["text:GrepSearch"]
    # the results before the verdict turn say so, not "write another tool call"
    assert last_user_text(server.requests[1]).endswith(DECIDE)


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_call_past_the_round_limit_gets_a_final_verdict_turn(server, fmt, transcript):
    grep = written("GrepSearch", query="failed", isRegexp=False)
    server.push(say(grep), say(grep), verdict(True))
    traces: list[JudgementTrace] = []
    result = await judge(server, fmt, traces, max_tool_rounds=1).evaluate(request_for(transcript))
    assert result.ok is True
    third = server.requests[2]
    assert last_user_text(third) == NO_MORE_TOOLS_TEXT
    assert SCHEMA_FIELD[fmt] in third.body  # no tool can be called: the answer schema applies
    choice = third.body["tool_choice"]
    assert choice == "none" or choice == {"type": "none"}
    assert traces[0].tool_calls == ["text:GrepSearch"] and traces[0].repaired


@pytest.mark.parametrize("fmt", FORMATS)
async def test_bad_arguments_go_back_as_an_error_without_running(server, fmt, transcript):
    server.push(say(written("ReadFile", filePath=str(transcript), startLine="one")), verdict(True))
    traces: list[JudgementTrace] = []
    await judge(server, fmt, traces).evaluate(request_for(transcript))
    sent = last_user_text(server.requests[1])
    assert "Error: bad arguments for ReadFile: missing endLine; startLine must be integer, got string" in sent
    assert "<transcript_data>" not in sent
    assert "text:ReadFile" not in traces[0].tool_calls  # the bad call was not run


@pytest.mark.parametrize("fmt", FORMATS)
async def test_other_json_in_the_answer_is_not_a_call(server, fmt, transcript):
    server.push(
        call("ReadFile", filePath=str(transcript), startLine=1, endLine=5),
        say('{"name": "deploy", "arguments": {"env": "prod"}}\n{"ok": true}'),
    )
    result = await judge(server, fmt, []).evaluate(request_for(transcript))
    assert result.ok is True and len(server.requests) == 2


@pytest.mark.parametrize("fmt", FORMATS)
async def test_switched_off_a_written_call_is_not_run(server, fmt, transcript):
    call_text = written("ReadFile", filePath=str(transcript), startLine=1, endLine=50)
    server.push(say(call_text), say(call_text), verdict(False, "No evidence read."))
    traces: list[JudgementTrace] = []
    off = judge(server, fmt, traces, env={"JUDGE_TEXT_TOOL_CALLS": "0"})
    result = await off.evaluate(request_for(transcript))
    assert result.ok is False
    assert all("Transcript lines" not in r.text for r in server.requests[:2])
    assert NUDGE_TOOLS in server.requests[1].text  # the plain nudge: no call to copy
    assert forced_tool_choice(fmt, server.requests[1].body)  # (a written call: no schema asked for)
    assert last_user_text(server.requests[2]).startswith(SUPPLIED.split("{")[0])
    assert "If you cannot make a structured tool call" not in server.requests[0].system
    assert traces[0].tool_calls == ["judge:ReadFile"]  # the written calls were not run


@pytest.mark.parametrize("fmt", FORMATS)
async def test_an_answer_before_reading_is_sent_back_once(server, fmt, transcript):
    # This server enforces neither tool_choice "required" nor the call schema.
    server.push(
        verdict(True),
        verdict(True),
        say(written("GrepSearch", query="failed", isRegexp=False)),
        verdict(False, "2 tests failed."),
    )
    traces: list[JudgementTrace] = []
    result = await judge(server, fmt, traces).evaluate(request_for(transcript))
    assert result.ok is False and len(server.requests) == 4
    nudged = server.requests[2]
    assert forced_tool_choice(fmt, nudged.body) and schema_name(fmt, nudged.body) == "tool_call"
    assert "Before you answer, read the transcript" in last_user_text(nudged)
    assert written("ReadFile", filePath=str(transcript), startLine=1, endLine=100) in last_user_text(nudged)
    # the answer given before reading is dropped: a small model would repeat it after reading
    assert [m["role"] for m in nudged.messages if m["role"] != "system"] == ["user", "user"]
    assert traces[0].tool_calls == ["text:GrepSearch"]


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_second_answer_without_reading_gets_the_transcript(server, fmt, transcript):
    # This server enforces neither tool_choice "required" nor the call schema.
    server.push(verdict(True), verdict(True), verdict(True), verdict(False, "2 tests failed."))
    traces: list[JudgementTrace] = []
    result = await judge(server, fmt, traces).evaluate(request_for(transcript))
    assert (result.ok, result.reason) == (False, "2 tests failed.") and len(server.requests) == 4
    supplied = last_user_text(server.requests[3])
    assert supplied.startswith(SUPPLIED.split("{")[0]) and "    42\tline 42: ERROR tests failed" in supplied
    assert schema_name(fmt, server.requests[3].body) == "verdict"  # all 60 lines shown: the verdict is next
    assert traces[0].tool_calls == ["judge:ReadFile"]


@pytest.mark.parametrize("fmt", FORMATS)
async def test_until_it_has_read_a_model_must_call_a_tool(server, fmt, transcript):
    bad = call("ReadFile", filePath=str(transcript), startLine="first", endLine=10)
    server.push(bad, call("ReadFile", filePath=str(transcript), startLine=40, endLine=43))
    server.push(verdict(False, "2 tests failed."))
    traces: list[JudgementTrace] = []
    result = await judge(server, fmt, traces).evaluate(request_for(transcript))
    assert (result.ok, result.reason) == (False, "2 tests failed.") and len(server.requests) == 3
    first, failed, after = server.requests
    assert forced_tool_choice(fmt, first.body) and forced_tool_choice(fmt, failed.body)  # nothing read yet
    assert schema_name(fmt, first.body) is None  # the server enforces it: no call schema
    assert not forced_tool_choice(fmt, after.body)  # read: the model is free again
    assert traces[0].tool_calls == ["ReadFile", "ReadFile"] and not traces[0].asked_to_read
    server.requests.clear()
    free = judge(server, fmt, [], env={"JUDGE_EVIDENCE_FIRST": "0"})
    server.push(call("ReadFile", filePath=str(transcript), startLine=1, endLine=10))
    await free.evaluate(request_for(transcript))
    assert server.requests[0].body["tool_choice"] == ({"type": "auto"} if fmt == "anthropic" else "auto")


def grammar_server(transcript: Path):
    """A server like llama.cpp: ignores tool_choice "required", enforces a JSON schema."""

    def answer(request: LLMRequest) -> Any:
        if schema_name(request.format, request.body) == "tool_call":
            return say(written("GrepSearch", query="ERROR", isRegexp=False))
        if RESULTS_HEADER in request.text:
            return verdict(False, "2 tests failed.")
        return say('No need for ReadFile, the answer says it all. {"ok": true}')  # unread

    return answer


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_server_that_ignores_required_is_asked_for_the_call_by_schema(server, fmt, transcript):
    server.handler = grammar_server(transcript)
    traces: list[JudgementTrace] = []
    judging = judge(server, fmt, traces)
    result = await judging.evaluate(request_for(transcript))
    assert (result.ok, result.reason) == (False, "2 tests failed.")
    first, forced, after = server.requests
    assert forced_tool_choice(fmt, first.body) and schema_name(fmt, first.body) is None
    assert schema_name(fmt, forced.body) == "tool_call"  # the same turn again, as a schema
    assert RESULTS_HEADER in after.text and "line 42: ERROR" in after.text
    assert schema_name(fmt, after.body) == "verdict_or_tool_call"  # a free turn: either, nothing else
    schema = json.dumps(forced.body)
    assert '"ReadFile"' in schema and '"GrepSearch"' in schema and '"startLine"' in schema
    assert traces[0].tool_calls == ["text:GrepSearch"]
    # Learned for the client: the next judgement asks by schema at once.
    server.requests.clear()
    again = await judging.evaluate(request_for(transcript))
    assert again.ok is False and len(server.requests) == 2
    assert schema_name(fmt, server.requests[0].body) == "tool_call"
    assert traces[1].tool_calls == ["text:GrepSearch"]


@pytest.mark.parametrize("fmt", FORMATS)
async def test_tools_and_the_answer_schema_never_share_a_request(server, fmt, transcript):
    server.push(say("Let me think about it."), say("Still thinking."), say("Hmm."), verdict(True))
    await judge(server, fmt, []).evaluate(request_for(transcript))
    first, forced, nudged, final = server.requests
    assert first.tool_names and SCHEMA_FIELD[fmt] not in first.body
    for request in (forced, nudged):
        assert request.tool_names and schema_name(fmt, request.body) == "tool_call"  # a call, not a verdict
    assert final.body["tool_choice"] in ("none", {"type": "none"})
    assert schema_name(fmt, final.body) == "verdict"
    without_transcript = len(server.requests)
    await judge(server, fmt, []).evaluate(request_for(None))
    alone = server.requests[without_transcript]
    assert not alone.tool_names and SCHEMA_FIELD[fmt] in alone.body  # no tools: schema from the start


async def test_a_server_without_tool_support_falls_back_to_text_calls(server, transcript):
    server.push(
        fail(500, "tools param requires --jinja flag"),
        say(written("GrepSearch", query="failed", isRegexp=False)),
        verdict(False, "2 tests failed."),
    )
    traces: list[JudgementTrace] = []
    result = await judge(server, "openai", traces).evaluate(request_for(transcript))
    assert result.ok is False
    rejected, plain, after = server.requests
    assert "tools" in rejected.body and "tools" not in plain.body and "tool_choice" not in plain.body
    assert "tools" not in after.body and "42: line 42" in last_user_text(after)
    assert traces[0].tool_calls == ["text:GrepSearch"]


async def test_what_a_server_rejected_is_not_sent_again_in_the_next_judgement(server, transcript):
    server.push(fail(500, "tools param requires --jinja flag"))
    grep = say(written("GrepSearch", query="failed", isRegexp=False))
    server.handler = lambda request: grep if len(request.messages) < 3 else None
    judging = judge(server, "openai", [])
    await judging.evaluate(request_for(transcript))
    first_judgement = len(server.requests)
    await judging.evaluate(request_for(transcript))
    assert first_judgement == 3 and len(server.requests) == 5  # no second rejection
    assert all("tools" not in r.body for r in server.requests[1:])


async def test_a_server_without_auto_tool_choice_is_asked_without_it(server, transcript):
    message = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
    server.push(fail(400, message), call("GrepSearch", query="failed", isRegexp=False), verdict(True))
    traces: list[JudgementTrace] = []
    free = judge(server, "openai", traces, env={"JUDGE_EVIDENCE_FIRST": "0"})  # tool_choice "auto" first
    await free.evaluate(request_for(transcript))
    rejected, retried, after = server.requests
    assert rejected.body["tool_choice"] == "auto"
    assert "tool_choice" not in retried.body and retried.tool_names == ["ReadFile", "GrepSearch"]
    assert "tool_choice" not in after.body
    assert traces[0].tool_calls == ["GrepSearch"]


async def test_a_grammar_error_drops_the_schema(server):
    server.push(fail(400, "failed to parse grammar: expecting name"), verdict(True))
    result = await judge(server, "openai", []).evaluate(request_for(None))
    assert result.ok is True
    assert "response_format" in server.requests[0].body and "response_format" not in server.requests[1].body


async def test_an_ordinary_server_error_is_still_retried_as_is(server):
    server.push(fail(500, "out of memory"), verdict(True))
    result = await judge(server, "openai", []).evaluate(request_for(None))
    assert result.ok is True
    assert "response_format" in server.requests[1].body


@pytest.mark.parametrize("fmt", FORMATS)
async def test_the_answer_length_cap_comes_from_the_environment(server, fmt):
    capped = judge(server, fmt, [], env={"JUDGE_MAX_OUTPUT_TOKENS": "256"})
    await capped.evaluate(request_for(None))
    await judge(server, fmt, []).evaluate(request_for(None))
    key = "max_completion_tokens" if fmt == "openai" else "max_tokens"
    assert [r.body[key] for r in server.requests] == [256, 4096]


async def test_a_bad_answer_length_cap_is_a_clear_hook_error(server):
    bad = judge(server, "openai", [], env={"JUDGE_MAX_OUTPUT_TOKENS": "lots"})
    with pytest.raises(HookError, match=r"JUDGE_MAX_OUTPUT_TOKENS must be a whole number of tokens.*'lots'"):
        await bad.evaluate(request_for(None))
    assert server.requests == []


@pytest.mark.parametrize("fmt", FORMATS)
async def test_evidence_first_can_be_switched_off(server, fmt, transcript):
    server.push(verdict(True))
    on = await judge(server, fmt, []).evaluate(request_for(transcript))
    assert on.ok is True and len(server.requests) == 4  # sent back (twice), then given the transcript
    server.requests.clear()
    server.push(verdict(True))
    off = judge(server, fmt, [], env={"JUDGE_EVIDENCE_FIRST": "0"})
    assert (await off.evaluate(request_for(transcript))).ok is True
    assert len(server.requests) == 1  # answered at once, as the model chose


@pytest.mark.parametrize("fmt", FORMATS)
async def test_the_temperature_comes_from_the_environment(server, fmt):
    await judge(server, fmt, [], env={"JUDGE_TEMPERATURE": "0"}).evaluate(request_for(None))
    await judge(server, fmt, []).evaluate(request_for(None))
    assert server.requests[0].body["temperature"] == 0
    assert "temperature" not in server.requests[1].body  # unset: the server's default


async def test_a_model_that_rejects_the_temperature_gets_its_default(server):
    rejected = (
        "Unsupported value: 'temperature' does not support 0 with this model. "
        "Only the default (1) value is supported."
    )
    server.push(fail(400, rejected), verdict(False, "missing tests"))
    first = await judge(server, "openai", [], env={"JUDGE_TEMPERATURE": "0"}).evaluate(request_for(None))
    assert first.ok is False and first.reason == "missing tests"
    assert "temperature" in server.requests[0].body and "temperature" not in server.requests[1].body
    assert "response_format" in server.requests[1].body  # only the rejected field is dropped


@pytest.mark.parametrize("raw", ["hot", "-1", "2.5"])
async def test_a_bad_temperature_is_a_clear_hook_error(server, raw):
    bad = judge(server, "openai", [], env={"JUDGE_TEMPERATURE": raw})
    with pytest.raises(HookError, match=rf"JUDGE_TEMPERATURE must be a number from 0 to 2, got '{raw}'"):
        await bad.evaluate(request_for(None))
    assert server.requests == []
