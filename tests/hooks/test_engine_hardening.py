"""What an agent's own text and a Python agent's own objects cannot do to the gate: lone
surrogates, SDK message objects, a transcript that is missing or huge, threads."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from judge.config import Hook, config_from_data
from judge.errors import HookError
from judge.hooks import command as commands
from judge.hooks.command import run_command_hook
from judge.hooks.engine import Engine
from judge.integrations import SessionFacts, StopGate
from judge.integrations.stop_gate import render_messages
from judge.llm import LLMJudge
from judge.state import Store
from judge.testing import LLMServer, verdict
from judge.transcripts import prepare_transcript
from tests.llm.test_judge import FORMATS, make_request

#: What decoding bytes that are not UTF-8 with surrogateescape gives (os.fsdecode, a
#: subprocess's output), and what a JSON "\udcff" escape in model-written text becomes.
LONE = "3 failed \udcff"


async def test_a_lone_surrogate_reaches_a_command_hook_as_the_same_json() -> None:
    context = {"hook_event_name": "Stop", "final_output": LONE}
    hook = Hook.model_validate({"type": "command", "command": "cat", "timeout": 5})
    started = time.monotonic()
    result = await run_command_hook(hook, json.dumps(context, ensure_ascii=False))
    assert not result.timed_out and time.monotonic() - started < 4
    assert result.stdout.isascii() or "\\udcff" in result.stdout
    assert json.loads(result.stdout) == context


def test_a_command_hook_judges_an_answer_holding_a_lone_surrogate() -> None:
    hook = {"type": "command", "command": "echo 'run the tests' >&2; exit 2", "timeout": 5}
    engine = Engine(config_from_data({"hooks": {"Stop": [hook]}}))
    decision = asyncio.run(engine.evaluate("Stop", {"final_output": f"Done. {LONE}"}))
    assert decision.decision == "block" and decision.reason == "run the tests"
    assert decision.hooks[0].error is None


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_lone_surrogate_in_the_prompt_is_sent_as_a_replacement_character(
    llm_server: LLMServer, fmt: str
) -> None:
    llm_server.default = verdict(False, "not done")
    result = await LLMJudge(env=llm_server.env(fmt)).evaluate(make_request(final_output=f"Done. {LONE}"))
    assert result.ok is False and result.reason == "not done"
    assert len(llm_server.requests) == 1 and "3 failed \ufffd" in llm_server.requests[0].text


def test_a_json_transcript_holding_a_surrogate_escape_is_rendered(tmp_path: Path) -> None:
    source = tmp_path / "t.jsonl"
    rows = [{"role": "user", "content": "add tests"}, {"role": "tool", "content": "bad byte \ud800 here"}]
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert "\\ud800" in source.read_text(encoding="utf-8")  # json.dumps escapes it
    text = prepare_transcript(source).read_text(encoding="utf-8")
    assert "add tests" in text and "bad byte ? here" in text


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_missing_transcript_is_judged_without_it(
    llm_server: LLMServer, fmt: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The tools are given over the transcript when it exists
    llm_server.default = verdict(False, "no tests were run")
    request = make_request(transcript=tmp_path / "gone.txt")
    result = await LLMJudge(env=llm_server.env(fmt)).evaluate(request)
    assert result.ok is False and result.reason == "no tests were run"
    assert llm_server.requests[0].tool_names == []
    assert "gone.txt not found; judged without it" in caplog.text


def test_stop_gate_reads_the_sdks_own_message_objects() -> None:
    # the official tool loops keep SDK objects: messages.append(choice.message),
    # {"role": "assistant", "content": response.content}
    from anthropic.types import TextBlock, ToolUseBlock
    from openai.types.chat import ChatCompletionMessage

    openai_message = ChatCompletionMessage.model_validate(
        {
            "role": "assistant",
            "content": "Running the tests.",
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": '{"c": 1}'}}
            ],
        }
    )
    blocks = [
        TextBlock(type="text", text="Looking at the logs."),
        ToolUseBlock(type="tool_use", id="toolu_1", name="grep", input={"q": "ERROR"}),
    ]
    lines = list(
        render_messages(
            [{"role": "user", "content": "Fix it."}, openai_message, {"role": "assistant", "content": blocks}]
        )
    )
    assert lines[:2] == ["USER: Fix it.", "ASSISTANT: Running the tests."]
    assert 'TOOL CALL bash [call_1]: {"c": 1}' in lines
    assert "ASSISTANT: Looking at the logs." in lines
    assert 'TOOL CALL grep [toolu_1]: {"q": "ERROR"}' in lines
    assert list(render_messages([object()])) == ["[a message judge cannot read: object]"]  # type: ignore[list-item]


async def test_a_transcript_copy_for_another_user_is_off_the_loop_and_within_the_timeout(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # under root every command hook gets its own copy of a transcript the agent sized
    stops: list[threading.Event] = []

    def slow_copy(transcript: Path, workdir: str, user: Any, stop: threading.Event) -> str:
        stops.append(stop)
        stop.wait(5)
        return str(transcript)

    monkeypatch.setattr(commands, "_transcript_for", slow_copy)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.02)
            ticks += 1

    beat = asyncio.ensure_future(ticker())
    hook = Hook.model_validate({"type": "command", "command": "true", "timeout": 1})
    started = time.monotonic()
    with pytest.raises(HookError, match="copying the transcript"):
        await run_command_hook(hook, "{}", timeout=0.3, transcript=tmp_path / "t.txt")
    beat.cancel()
    assert time.monotonic() - started < 1.2
    assert ticks >= 5  # the event loop kept running while the copy went on
    assert stops and stops[0].is_set()  # and the copy is told to stop, not left running


def test_a_transcript_copy_is_whole_and_stops_when_told(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(commands, "COPY_CHUNK", 1000)
    source = tmp_path / "t.txt"
    source.write_bytes(bytes(range(256)) * 40)
    commands._copy_until(source, tmp_path / "copy.txt", threading.Event())
    assert (tmp_path / "copy.txt").read_bytes() == source.read_bytes()
    stop = threading.Event()
    stop.set()
    with pytest.raises(HookError, match="stopped"):
        commands._copy_until(source, tmp_path / "stopped.txt", stop)
    assert (tmp_path / "stopped.txt").stat().st_size == 0


def test_stop_gates_on_several_threads_share_one_store(tmp_path: Path) -> None:
    # a threaded agent server: each check_sync runs its own event loop
    hook = {
        "type": "prompt",
        "prompt": "Done? $ARGUMENTS",
        "model": "fake:block:Run the tests.",
        "maxRejections": 9,
    }
    engine = Engine(config_from_data({"hooks": {"Stop": [hook]}}))
    store = Store(tmp_path / "state.sqlite")
    gate = StopGate(engine, SessionFacts(session_id="s1"), store=store)
    results: list[Any] = []

    def check() -> None:
        try:
            results.append(gate.check_sync("Done.").rejection_count)
        except Exception as exc:  # the assertion below names it
            results.append(exc)

    threads = [threading.Thread(target=check) for _ in range(4)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(results) == [1, 2, 3, 4]
    assert store.rejection_count("s1") == 4 and time.monotonic() - started < 30


def test_a_reason_quoting_a_lone_surrogate_is_printed_not_a_crash(tmp_path: Path) -> None:
    # the hook reads the answer's surrogate as JSON's escape and quotes it back: printing the
    # block must not crash (Claude Code reads exit 1 as a non-blocking error: a fail open)
    config = tmp_path / "c.yaml"
    config.write_text(
        "hooks:\n  Stop:\n    - type: command\n      failMode: block\n      script: |\n"
        "        #!/usr/bin/env python3\n        import json, sys\n"
        "        tail = json.load(sys.stdin)['final_output'][-3:]\n"
        "        print(json.dumps({'decision': 'block', 'reason': 'ends mid-word: ' + tail}))\n",
        encoding="utf-8",
    )
    context = tmp_path / "ctx.json"
    context.write_text('{"final_output": "Deploy status: \\ud83d"}', encoding="utf-8")
    argv = [sys.executable, "-m", "judge", "run", "--config", str(config), "--event", "Stop"]
    done = subprocess.run(
        [*argv, "--context", str(context), "--session", "s\udcff", "--state", str(tmp_path / "s.db")],
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["decision"] == "block" and answer["reason"] == "ends mid-word: : \ud83d"


async def test_an_observer_can_write_the_judgement_trace_as_json(llm_server: LLMServer) -> None:
    # bench_real_model writes every trace to a JSONL file: its fields stay plain data
    seen: list[str] = []
    judge = LLMJudge(
        env=llm_server.env("openai"), observer=lambda request, trace: seen.append(json.dumps(trace.__dict__))
    )
    assert (await judge.evaluate(make_request())).ok
    (line,) = seen
    assert json.loads(line)["input_tokens"] > 0 and json.loads(line)["requests"] == 1
