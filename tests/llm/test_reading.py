"""The judge's reading log: repeated calls are not run again, and a transcript read in
full ends the reading with the verdict turn (unit tests, then both SDKs end to end)."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from judge.config import Hook
from judge.hooks.judging import PromptRequest
from judge.llm import JudgementTrace, LLMJudge
from judge.llm.tools import TranscriptTools
from judge.llm.tools.read_log import ALL_READ, DECIDE, REPEATED, ReadLog
from judge.testing import LLMServer, call, say, verdict

FORMATS = ["openai", "anthropic"]
SCHEMA_FIELD = {"openai": "response_format", "anthropic": "output_config"}
for _sdk in FORMATS:
    importlib.import_module(_sdk)


def lines_file(tmp_path: Path, count: int, long_line: int | None = None) -> Path:
    path = tmp_path / "t.txt"
    lines = [f"step {i}" for i in range(1, count + 1)]
    if long_line is not None:
        lines[long_line - 1] = "x" * 50_000
    path.write_text("\n".join(lines) + "\n")
    return path


def read(log: ReadLog, tools: TranscriptTools, start: int, end: int) -> None:
    arguments = {"filePath": str(tools.path), "startLine": start, "endLine": end}
    log.record("ReadFile", arguments, tools.call("ReadFile", arguments))


def test_the_same_call_twice_is_a_repeat(tmp_path):
    tools, log = TranscriptTools(lines_file(tmp_path, 300)), ReadLog()
    grep = {"query": "step 7", "isRegexp": False}
    assert not log.is_repeat("GrepSearch", grep)
    log.record("GrepSearch", grep, tools.call("GrepSearch", grep))
    assert log.is_repeat("GrepSearch", dict(reversed(grep.items())))  # argument order does not matter
    assert not log.is_repeat("GrepSearch", {"query": "step 8", "isRegexp": False})


def test_a_window_inside_what_was_shown_is_a_repeat(tmp_path):
    tools, log = TranscriptTools(lines_file(tmp_path, 300)), ReadLog()
    read(log, tools, 1, 100)
    path = str(tools.path)
    assert log.is_repeat("ReadFile", {"filePath": path, "startLine": 10, "endLine": 50})
    assert not log.is_repeat("ReadFile", {"filePath": path, "startLine": 90, "endLine": 120})
    assert not log.is_repeat("ReadFile", {"filePath": path, "startLine": "ten", "endLine": 50})
    assert log.all_read() is None


def test_windows_that_cover_every_line_mean_all_read(tmp_path):
    tools, log = TranscriptTools(lines_file(tmp_path, 300)), ReadLog()
    read(log, tools, 101, 300)
    assert log.all_read() is None
    read(log, tools, 1, 100)
    assert log.all_read() == 300
    # a window asked past the end is inside what was shown
    assert log.is_repeat("ReadFile", {"filePath": str(tools.path), "startLine": 250, "endLine": 900})


def test_a_clipped_line_is_not_read_in_full(tmp_path):
    tools, log = TranscriptTools(lines_file(tmp_path, 5, long_line=3)), ReadLog()
    read(log, tools, 1, 5)
    assert log.all_read() is None  # GrepSearch can still find what the clipped line hides


def test_an_error_answer_shows_no_lines(tmp_path):
    tools, log = TranscriptTools(lines_file(tmp_path, 5)), ReadLog()
    read(log, tools, 9, 12)  # "only 5 lines"
    assert log.all_read() is None
    assert log.is_repeat("ReadFile", {"filePath": str(tools.path), "startLine": 9, "endLine": 12})


def test_only_calls_that_showed_the_transcript_count_as_reading(tmp_path):
    tools, log = TranscriptTools(lines_file(tmp_path, 5)), ReadLog()
    for name, arguments in [
        ("ReadFile", {"filePath": str(tools.path), "startLine": "one"}),  # bad arguments
        ("ReadFile", {"filePath": str(tools.path), "startLine": 9, "endLine": 12}),  # past the end
        ("GrepSearch", {"query": ""}),
        ("read_file", {}),  # not a tool
    ]:
        log.record(name, arguments, tools.call(name, arguments))
        assert not log.has_read(), name
    grep = {"query": "no such words", "isRegexp": False}
    log.record("GrepSearch", grep, tools.call("GrepSearch", grep))
    assert log.has_read()  # a search that ran: finding nothing is evidence too
    other = ReadLog()
    read(other, tools, 2, 3)
    assert other.has_read()


# End to end: the real SDKs against the local LLM server.


@pytest.fixture
def server(llm_server: LLMServer) -> LLMServer:
    return llm_server  # (tests/conftest.py: reset for each test)


def request_for(transcript: Path) -> PromptRequest:
    context: dict[str, Any] = {
        "hook_event_name": "Stop",
        "final_output": "All done.",
        "execution_summary": str(transcript),
    }
    hook = Hook(type="prompt", prompt="Check the answer against the transcript. $ARGUMENTS", timeout=20)
    return PromptRequest(hook=hook, context=context, transcript_path=transcript)


def judge(server: LLMServer, fmt: str, traces: list[JudgementTrace]) -> LLMJudge:
    return LLMJudge(env=server.env(fmt), observer=lambda _request, trace: traces.append(trace))


def is_final_turn(fmt: str, body: dict[str, Any]) -> bool:
    return SCHEMA_FIELD[fmt] in body and body["tool_choice"] in ("none", {"type": "none"})


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_transcript_read_in_full_ends_the_reading(server, fmt, tmp_path):
    path = lines_file(tmp_path, 60)
    server.push(call("ReadFile", filePath=str(path), startLine=1, endLine=100), verdict(False, "Not done."))
    traces: list[JudgementTrace] = []
    result = await judge(server, fmt, traces).evaluate(request_for(path))
    assert (result.ok, result.reason) == (False, "Not done.")
    first, second = server.requests
    assert not is_final_turn(fmt, first.body)
    assert second.tool_results[0].endswith(ALL_READ.format(lines=60) + "\n\n" + DECIDE)
    assert is_final_turn(fmt, second.body)  # nothing left to read: the schema applies
    assert traces[0].tool_calls == ["ReadFile"]


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_repeated_call_is_not_run_and_asks_for_the_verdict(server, fmt, tmp_path):
    path = lines_file(tmp_path, 300)
    again = call("ReadFile", filePath=str(path), startLine=1, endLine=20)
    server.push(again, call("ReadFile", filePath=str(path), startLine=5, endLine=15), verdict(True))
    traces: list[JudgementTrace] = []
    assert (await judge(server, fmt, traces).evaluate(request_for(path))).ok is True
    _, second, third = server.requests
    assert "    20\tstep 20" in second.tool_results[0] and not is_final_turn(fmt, second.body)
    assert third.tool_results[-1] == REPEATED + "\n\n" + DECIDE and is_final_turn(fmt, third.body)
    assert traces[0].tool_calls == ["ReadFile"]  # the repeat was not run


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_repeated_text_call_is_not_run_either(server, fmt, tmp_path):
    path = lines_file(tmp_path, 300)
    written = json.dumps({"name": "GrepSearch", "arguments": {"query": "step 7", "isRegexp": False}})
    server.push(say(written), say(f"```json\n{written}\n```"), verdict(True))
    traces: list[JudgementTrace] = []
    assert (await judge(server, fmt, traces).evaluate(request_for(path))).ok is True
    third = server.requests[2]
    sent = json.dumps(third.messages[-1])
    assert "Not run again" in sent and "step 70" not in sent
    assert is_final_turn(fmt, third.body)
    # the verdict turn restates the check, and no longer invites another call
    last = third.messages[-1]["content"]
    text = last if isinstance(last, str) else "".join(part.get("text", "") for part in last)
    assert text.endswith(DECIDE) and "write another tool call" not in text
    assert traces[0].tool_calls == ["text:GrepSearch"]


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_verdict_cut_off_in_the_schema_turn_still_decides(server, fmt, tmp_path):
    path = lines_file(tmp_path, 10)
    rambling = '{"ok": false, "reason": "Step 3 failed. Step 3 failed. Step 3 fa'
    server.push(call("ReadFile", filePath=str(path), startLine=1, endLine=100), say(rambling))
    result = await judge(server, fmt, []).evaluate(request_for(path))
    assert (result.ok, result.reason) == (False, "Step 3 failed. Step 3 failed. Step 3 fa [...]")
    assert len(server.requests) == 2


@pytest.mark.parametrize("fmt", FORMATS)
async def test_outside_the_schema_turn_a_cut_off_verdict_gets_the_repair_turn(server, fmt, tmp_path):
    path = lines_file(tmp_path, 300)  # not read in full: the turn after the read offers tools
    cut = '{"ok": true, "reason": "all goo'
    read = call("ReadFile", filePath=str(path), startLine=1, endLine=10)
    server.push(read, say(cut), verdict(False, "No."))
    result = await judge(server, fmt, []).evaluate(request_for(path))
    assert (result.ok, result.reason) == (False, "No.")
    assert len(server.requests) == 3


@pytest.mark.parametrize("fmt", FORMATS)
async def test_without_a_transcript_every_turn_is_a_schema_turn(server, fmt):
    context: dict[str, Any] = {"hook_event_name": "Stop", "final_output": "All done."}
    hook = Hook(type="prompt", prompt="Is the answer complete? $ARGUMENTS", timeout=20)
    server.push(say('{"ok": false, "reason": "It is not done. It is not done. It is no'))
    result = await judge(server, fmt, []).evaluate(PromptRequest(hook=hook, context=context))
    assert (result.ok, result.reason) == (False, "It is not done. It is not done. It is no [...]")
    assert len(server.requests) == 1 and SCHEMA_FIELD[fmt] in server.requests[0].body


@pytest.mark.parametrize("fmt", FORMATS)
async def test_calls_that_read_nothing_do_not_excuse_the_verdict(server, fmt, tmp_path):
    path = lines_file(tmp_path, 20)
    bad = call("ReadFile", filePath=str(path), startLine="first", endLine=10)
    server.push(bad, verdict(True), verdict(True), verdict(True), verdict(False, "Step 20 is missing."))
    traces: list[JudgementTrace] = []
    result = await judge(server, fmt, traces).evaluate(request_for(path))
    assert (result.ok, result.reason) == (False, "Step 20 is missing.")
    # the bad call, the unread answer, the call required (then asked for by schema: this
    # server enforces neither), the judge's own read, the verdict
    assert len(server.requests) == 5
    assert "read for you" in json.dumps(server.requests[4].messages[-1]) and "step 20" in json.dumps(
        server.requests[4].messages[-1]
    )
    assert traces[0].tool_calls == ["ReadFile", "judge:ReadFile"]


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_verdict_in_the_final_turn_with_nothing_read_gets_the_lines_first(server, fmt, tmp_path):
    path = lines_file(tmp_path, 20)
    bad = call("ReadFile", filePath=str(path), startLine="first", endLine=10)
    # The repeat of the bad call is not run and ends the reading: the next turn is the
    # schema turn, where the verdict would have been taken with nothing read.
    server.push(bad, bad, verdict(True), verdict(False, "Step 20 is missing."))
    traces: list[JudgementTrace] = []
    result = await judge(server, fmt, traces).evaluate(request_for(path))
    assert (result.ok, result.reason) == (False, "Step 20 is missing.")
    assert len(server.requests) == 4
    assert is_final_turn(fmt, server.requests[2].body) and is_final_turn(fmt, server.requests[3].body)
    assert "read for you" in json.dumps(server.requests[3].messages[-1])
    assert traces[0].tool_calls == ["ReadFile", "judge:ReadFile"]


@pytest.mark.parametrize("fmt", FORMATS)
async def test_written_calls_refused_until_the_round_limit_do_not_excuse_the_verdict(server, fmt, tmp_path):
    path = lines_file(tmp_path, 20)
    # A call written as text whose arguments do not fit the tool is refused, not run.
    refused = say(json.dumps({"name": "ReadFile", "arguments": {"filePath": str(path), "startLine": "one"}}))
    server.push(*[refused] * 10, verdict(True), verdict(False, "Step 20 is missing."))
    traces: list[JudgementTrace] = []
    result = await judge(server, fmt, traces).evaluate(request_for(path))
    assert (result.ok, result.reason) == (False, "Step 20 is missing.")
    assert len(server.requests) == 12
    assert "Error" in json.dumps(server.requests[1].messages[-1])  # the refusal went back
    assert "read for you" in json.dumps(server.requests[11].messages[-1])
    assert traces[0].tool_calls == ["judge:ReadFile"]
