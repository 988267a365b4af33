"""Tool work is bounded and stops with its hook; one request cannot starve the others.

A transcript of one multi-GB line (a sparse file: no disk used) made a ReadFile run
minutes past its hook's timeout, and a few dozen such requests filled the shared thread
pool so unrelated judgements waited. These tests run real judgements (the openai SDK
against the local test server) over such a file.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from judge.config import Hook
from judge.errors import HookError
from judge.hooks.judging import PromptRequest
from judge.llm import LLMJudge
from judge.llm.tools import TranscriptTools
from judge.llm.tools.reader import MAX_LINE_SCAN_BYTES
from judge.testing import LLMServer, Reply, calls, verdict

HUGE_BYTES = 16 << 30  # one 16 GB line of NUL bytes, sparse


@pytest.fixture(scope="module")
def huge(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("huge") / "one-line.txt"
    with path.open("wb") as handle:
        handle.truncate(HUGE_BYTES)
    return path


@pytest.fixture
def small(tmp_path) -> Path:
    path = tmp_path / "small.txt"
    path.write_text("user: fix it\nassistant: fixed, tests pass\n")
    return path


def _request(transcript: Path, timeout: int) -> PromptRequest:
    context = {"hook_event_name": "Stop", "final_output": "done", "execution_summary": str(transcript)}
    hook = Hook(type="prompt", prompt="Check. $ARGUMENTS", timeout=timeout)
    return PromptRequest(hook=hook, context=context, transcript_path=transcript)


def _reads_then_allows(request) -> Reply:
    """The model asks for two reads of the transcript, then allows."""
    if request.tool_results:
        return verdict(True)
    path = "one-line.txt" if "one-line.txt" in request.text else "small.txt"
    window = {"filePath": path, "startLine": 1, "endLine": 50}
    return calls(("ReadFile", window), ("GrepSearch", {"query": "needle", "isRegexp": False}))


def _tool_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("judge-tools")]


@pytest.mark.slow
@pytest.mark.timeout(60)
async def test_a_read_of_a_huge_single_line_stops_at_the_hook_timeout(huge):
    with LLMServer() as server:
        server.handler = _reads_then_allows
        judge = LLMJudge(env=server.env("openai"))
        loop = asyncio.get_running_loop()
        began = loop.time()
        with pytest.raises(HookError, match=r"timed out after 2s|hook timeout was reached"):
            await judge.evaluate(_request(huge, timeout=2))
        assert loop.time() - began < 4
    # and the tool threads stop too (they used to read on for minutes)
    for thread in _tool_threads():
        await asyncio.to_thread(thread.join, 5)
        assert not thread.is_alive(), "a tool thread outlived its judgement"


@pytest.mark.slow
@pytest.mark.timeout(90)
async def test_slow_tool_requests_do_not_starve_another_judgement(huge, small):
    with LLMServer() as server:
        server.handler = _reads_then_allows
        judge = LLMJudge(env=server.env("openai"))
        hogs = [asyncio.create_task(judge.evaluate(_request(huge, timeout=6))) for _ in range(12)]
        # more hogs (2 tool calls each) than the loop's shared pool has threads
        await asyncio.sleep(0)
        verdict_ = await asyncio.wait_for(judge.evaluate(_request(small, timeout=30)), 30)
        still_running = sum(not task.done() for task in hogs)
        results = await asyncio.gather(*hogs, return_exceptions=True)
    assert verdict_.ok is True
    assert still_running == len(hogs)  # answered while every slow request was still busy
    assert all(isinstance(r, HookError) for r in results)


def test_read_file_reads_a_bounded_part_of_a_huge_line(tmp_path):
    path = tmp_path / "t.txt"
    with path.open("wb") as handle:
        handle.write(b"head ")
        handle.seek(4 * MAX_LINE_SCAN_BYTES)
        handle.write(b"\nsecond line\nthird\n")
    tools = TranscriptTools(path)
    out = tools.ReadFile(str(path), 1, 3).splitlines()
    assert out[0] == "Transcript lines 1-3 of 3:"
    assert out[1].startswith("     1\thead ") and f"[line truncated: over {MAX_LINE_SCAN_BYTES}" in out[1]
    assert out[2:] == ["     2\tsecond line", "     3\tthird"]
    # reaching the line after the huge one goes through the index, not the huge line
    assert tools.ReadFile(str(path), 2, 2).splitlines()[1] == "     2\tsecond line"


def test_a_cancelled_budget_stops_a_tool_call(huge):
    from judge.llm.tools import ToolDeadline

    budget = ToolDeadline()
    budget.cancel()
    tools = TranscriptTools(huge, budget=budget)
    assert "stopped: the judgement's time limit was reached" in tools.call("ReadFile", {"startLine": 1})
    assert "stopped" in tools.call("GrepSearch", {"query": "x", "isRegexp": True})
