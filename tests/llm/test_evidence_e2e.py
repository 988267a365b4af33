"""Rejections that cite evidence (``evidence: required``), judged through the real openai
and anthropic SDKs against the local test server (scripted replies, no network)."""

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
from judge.llm.evidence import MAX_CITATIONS, MAX_QUOTE_CHARS
from judge.testing import LLMServer, call, say, verdict

FORMATS = ["openai", "anthropic"]

for _sdk in FORMATS:  # the first SDK import takes seconds
    importlib.import_module(_sdk)


@pytest.fixture
def server(llm_server: LLMServer) -> LLMServer:
    return llm_server  # (tests/conftest.py: reset for each test)


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "transcript.txt"
    lines = [f"step {i}: agent did thing {i}" for i in range(1, 201)]
    lines[41] = "tool deploy -> ERROR   deploy failed: connection refused"
    lines[99] = "assistant: I skipped the tests because they were slow"
    path.write_text("\n".join(lines) + "\n")
    return path


def request_for(transcript: Path | None) -> PromptRequest:
    context: dict[str, Any] = {
        "hook_event_name": "Stop",
        "agent_name": "my_agent",
        "final_output": "Deployed and tested.",
        "stop_hook_active": False,
        "stop_rejection_count": 0,
    }
    if transcript is not None:
        context["execution_summary"] = str(transcript)
    fields: dict[str, Any] = {"type": "prompt", "prompt": "Check it. $ARGUMENTS", "evidence": "required"}
    return PromptRequest(hook=Hook(**fields), context=context, transcript_path=transcript)


def rejection(reason: str, citations: Any) -> Any:
    return say(json.dumps({"ok": False, "reason": reason, "citations": citations}))


def read(transcript: Path, start: int = 1, end: int = 100) -> Any:
    return call("ReadFile", filePath=str(transcript), startLine=start, endLine=end)


async def judge(
    server: LLMServer, fmt: str, request: PromptRequest, trace: list[JudgementTrace] | None = None
):
    observer = (lambda _req, t: trace.append(t)) if trace is not None else None
    return await LLMJudge(env=server.env(fmt), observer=observer).evaluate(request)


@pytest.mark.parametrize("fmt", FORMATS)
async def test_verified_citation_passes_through(server, fmt, transcript):
    server.push(
        read(transcript, 40, 44),
        rejection("The deploy failed.", [{"line": 42, "quote": "ERROR deploy failed: connection refused"}]),
    )
    result = await judge(server, fmt, request_for(transcript))
    assert result.ok is False
    assert [(c.line, c.quote) for c in result.citations or []] == [
        (42, "ERROR deploy failed: connection refused")
    ]
    assert result.reason == 'The deploy failed.\nEvidence: line 42: "ERROR deploy failed: connection refused"'
    assert len(server.requests) == 2  # no re-ask
    assert "Evidence is required for a rejection" in server.requests[0].system


@pytest.mark.parametrize("fmt", FORMATS)
async def test_structured_output_schema_has_citations(server, fmt, transcript):
    server.push(say("not a verdict"), verdict(True))
    await judge(server, fmt, request_for(None))
    body = server.requests[-1].body
    schema = (
        body["response_format"]["json_schema"]["schema"]
        if fmt == "openai"
        else body["output_config"]["format"]["schema"]
    )
    block = schema["anyOf"][-1] if "anyOf" in schema else schema  # a local server: allow, block
    assert block["properties"]["citations"]["items"]["required"] == ["line", "quote"]


@pytest.mark.parametrize("fmt", FORMATS)
async def test_allow_needs_no_citations(server, fmt, transcript):
    server.push(read(transcript), verdict(True))
    result = await judge(server, fmt, request_for(transcript))
    assert result.ok is True and result.citations is None
    assert len(server.requests) == 2


@pytest.mark.parametrize("fmt", FORMATS)
async def test_hallucinated_quote_is_reasked_then_verified(server, fmt, transcript):
    traces: list[JudgementTrace] = []
    server.push(
        read(transcript),
        rejection("Tests were skipped.", [{"line": 100, "quote": "the test suite failed with 3 errors"}]),
        rejection(
            "Tests were skipped.", [{"line": 100, "quote": "I skipped the tests because they were slow"}]
        ),
    )
    result = await judge(server, fmt, request_for(transcript), traces)
    assert result.ok is False
    assert result.reason is not None
    assert 'Evidence: line 100: "I skipped the tests because they were slow"' in result.reason
    reask = server.requests[2].text
    assert "did not check out" in reask
    assert "'the test suite failed with 3 errors' is not on lines 98-102" in reask
    assert traces[0].evidence_reasks == 1 and traces[0].citation_problems == 1


@pytest.mark.parametrize("fmt", FORMATS)
async def test_hallucinated_twice_is_a_hook_error(server, fmt, transcript):
    made_up = [{"line": 100, "quote": "rm -rf / was executed"}]
    server.push(read(transcript), rejection("Dangerous.", made_up), rejection("Dangerous.", made_up))
    with pytest.raises(HookError, match=r"evidence: required.*even after a re-ask.*rm -rf.*failMode applies"):
        await judge(server, fmt, request_for(transcript))
    assert len(server.requests) == 3  # one re-ask only


@pytest.mark.parametrize("fmt", FORMATS)
async def test_wrong_line_number(server, fmt, transcript):
    server.push(
        read(transcript),
        rejection("Deploy failed.", [{"line": 10, "quote": "deploy failed: connection refused"}]),
        rejection("Deploy failed.", [{"line": 43, "quote": "deploy failed: connection refused"}]),
    )
    result = await judge(server, fmt, request_for(transcript))
    assert "is not on lines 8-12" in server.requests[2].text
    # line 43 is within the documented window of two lines around line 42
    assert result.citations is not None and result.citations[0].line == 43


@pytest.mark.parametrize("fmt", FORMATS)
async def test_line_past_the_end(server, fmt, transcript):
    server.push(read(transcript), rejection("x", [{"line": 9999, "quote": "deploy failed"}]), verdict(True))
    result = await judge(server, fmt, request_for(transcript))
    assert result.ok is True  # the judge changed its mind after the re-ask
    assert "line 9999: the transcript has only 200 lines" in server.requests[2].text


@pytest.mark.parametrize("fmt", FORMATS)
async def test_missing_citations(server, fmt, transcript):
    server.push(read(transcript), verdict(False, "Bad."), verdict(False, "Still bad."))
    with pytest.raises(HookError, match=r"no citations: a rejection must cite"):
        await judge(server, fmt, request_for(transcript))
    assert "no citations" in server.requests[2].text


@pytest.mark.parametrize("fmt", FORMATS)
async def test_no_transcript_is_an_error_without_reask(server, fmt):
    server.push(rejection("Bad.", [{"line": 1, "quote": "anything"}]))
    with pytest.raises(HookError, match=r"no transcript to cite"):
        await judge(server, fmt, request_for(None))
    assert len(server.requests) == 1


@pytest.mark.parametrize("fmt", FORMATS)
async def test_quotes_from_a_huge_transcript(server, fmt, tmp_path):
    path = tmp_path / "huge.txt"
    long_line = "x" * 300_000 + " NEEDLE: payment captured twice " + "y" * 300_000
    with path.open("w") as handle:
        for i in range(1, 150_001):
            handle.write(long_line if i == 120_000 else f"row {i} ok")
            handle.write("\n")
        handle.write("row 150001: FINAL refund issued\n")
    server.push(
        call("GrepSearch", query="NEEDLE", isRegexp=False),
        rejection(
            "Double charge.",
            [
                {"line": 120_000, "quote": "NEEDLE: payment captured twice"},
                {"line": 150_001, "quote": "FINAL refund issued"},
            ],
        ),
    )
    result = await judge(server, fmt, request_for(path))
    assert [c.line for c in result.citations or []] == [120_000, 150_001]
    assert len(server.requests) == 2


HOSTILE = [
    (
        [{"line": "forty-two", "quote": "deploy failed"}],
        "'line' must be an integer line number, got 'forty-two'",
    ),
    ([{"line": True, "quote": "deploy failed"}], "'line' must be an integer line number, got True"),
    ([{"line": 42.5, "quote": "deploy failed"}], "'line' must be an integer line number, got 42.5"),
    ([{"line": 0, "quote": "deploy failed"}], "line 0 does not exist"),
    ([{"line": 42, "quote": "x" * 1_000_000}], f"the quote is 1000000 characters; at most {MAX_QUOTE_CHARS}"),
    ([{"line": 42, "quote": ["deploy"]}], "'quote' must be a string"),
    ([{"line": 42, "quote": "  "}], "the quote is too short"),
    (
        [{"line": 42, "quote": "deploy failed"}] * 5000,
        f"too many citations (5000); cite at most {MAX_CITATIONS}",
    ),
    ("line 42", "'citations' must be a list"),
    ([], "'citations' is empty"),
    (["line 42"], "citation 1: must be an object"),
    ([{"line": 10**30, "quote": "deploy failed"}], "the transcript has only 200 lines"),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(("citations", "message"), HOSTILE, ids=[str(i) for i in range(len(HOSTILE))])
async def test_hostile_citations_give_clear_errors(server, fmt, transcript, citations, message):
    server.push(read(transcript), rejection("Bad.", citations), rejection("Bad.", citations))
    with pytest.raises(HookError) as caught:
        await judge(server, fmt, request_for(transcript))
    error = str(caught.value)
    assert message in error and "failMode applies" in error
    assert len(error) < 2000  # bounded, whatever the model sent
    assert message in server.requests[2].text


@pytest.mark.parametrize("fmt", FORMATS)
async def test_line_numbers_are_those_of_the_rendered_transcript(server, fmt, tmp_path):
    messages = [
        {"role": "user", "content": "Deploy the service."},
        {"role": "assistant", "content": "Deploying now."},
        {"role": "tool", "content": "deploy: ERROR connection refused"},
        {"role": "assistant", "content": "Deployed successfully."},
    ]
    path = tmp_path / "session.json"
    path.write_text(json.dumps({"messages": messages}))
    # The raw file is one line; ReadFile shows the rendered text, where the error is line 8.
    server.push(
        read(path, 1, 20), rejection("Deploy failed.", [{"line": 8, "quote": "ERROR connection refused"}])
    )
    result = await judge(server, fmt, request_for(path))
    assert "     8\tdeploy: ERROR connection refused" in server.requests[1].tool_results[-1]
    assert [c.line for c in result.citations or []] == [8]


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_reasonless_stop_rejection_is_an_approval_and_needs_no_citations(server, fmt, transcript):
    server.push(read(transcript), say('{"ok": false}'))
    result = await judge(server, fmt, request_for(transcript))
    assert (result.ok, result.reason, result.citations) == (False, None, None)
    assert len(server.requests) == 2  # not re-asked


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_reasonless_tool_denial_needs_citations(server, fmt, transcript):
    request = request_for(transcript)
    context = {**request.context, "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {}}
    request = PromptRequest(hook=request.hook, context=context, transcript_path=transcript)
    server.push(read(transcript), say('{"ok": false}'), say('{"ok": false}'))
    with pytest.raises(HookError, match="no citations"):
        await judge(server, fmt, request)
    assert len(server.requests) == 3
