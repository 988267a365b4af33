"""StopGate beyond the loop's happy path: a hook that fails (its failMode decides), a store
that fails (an error, never an allow), counts read back from the store, the SDKs' own
message objects, and threads sharing one store."""

from __future__ import annotations

import shutil
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from judge.config import config_from_data
from judge.errors import HookError
from judge.hooks.engine import Engine
from judge.hooks.judging import PromptRequest, PromptVerdict
from judge.integrations import SessionFacts, StopGate
from judge.integrations.stop_gate import render_messages
from judge.state import Store
from tests.hooks.test_gate import stop_gate

# --------------------------------------------------------------------------- failures


class FailingJudge:
    def __init__(self) -> None:
        self.calls = 0

    async def evaluate(self, request: PromptRequest) -> PromptVerdict:
        self.calls += 1
        raise HookError("OPENAI_API_KEY is not set (needed for openai:gpt-x)")


def stop_config(**hook: object) -> Engine:
    config = config_from_data({"hooks": {"Stop": [{"type": "prompt", "prompt": "Done? $ARGUMENTS", **hook}]}})
    return Engine(config, judge=FailingJudge())


async def test_stop_gate_when_a_hook_fails_its_fail_mode_decides() -> None:
    lenient = await StopGate(stop_config()).check("The answer.")
    assert (lenient.stop, lenient.forced) == (True, False)  # Stop prompt hooks default to allow
    assert lenient.decision.hooks[0].error == "OPENAI_API_KEY is not set (needed for openai:gpt-x)"

    strict_gate = StopGate(stop_config(failMode="block"), SessionFacts(session_id="s"))
    strict = await strict_gate.check("The answer.")
    assert strict.stop is False
    assert strict.reason == "Hook error: OPENAI_API_KEY is not set (needed for openai:gpt-x)"
    assert strict_gate.rejection_count() == 1  # and it counts, so maxRejections still ends the loop


async def test_stop_gate_whose_store_fails_raises_instead_of_allowing(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    store = Store(folder / "state.sqlite")
    engine = stop_config(failMode="block")
    gate = StopGate(engine, SessionFacts(session_id="s"), store=store)
    shutil.rmtree(folder)
    folder.write_text("not a folder any more")  # the database cannot be opened again
    store.close()
    # the session's lock file (next to the database) or the database itself
    with pytest.raises((sqlite3.OperationalError, OSError)):
        await gate.check("The answer.")
    judge = engine.judge
    assert isinstance(judge, FailingJudge) and judge.calls == 0  # nothing judged, nothing allowed


# --------------------------------------------------------------------------- counts and inputs


async def test_stop_gate_reads_the_subagent_count_back_from_the_store(tmp_path: Path) -> None:
    gate = stop_gate(tmp_path)
    first = StopGate(gate, event="SubagentStop")
    assert not (await first.check("todo")).stop
    restarted = StopGate(gate.engine, store=gate.store, event="SubagentStop")
    assert restarted.rejection_count() == 1


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


def test_stop_gates_on_several_threads_share_one_store(tmp_path: Path) -> None:
    # a threaded agent server: each check_sync runs its own event loop
    hook = {
        "type": "prompt",
        "prompt": "Done? $ARGUMENTS",
        "model": "fake:block:Run the tests.",
        "maxRejections": 9,
        "repeats": 9,  # (the same answer each time: not to end as stalled)
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


# --------------------------------------------------------------------------- loops that end honestly


class Scripted:
    """Impossible for answers saying "key?", the same rejection for everything else."""

    def __init__(self) -> None:
        self.calls = 0

    async def evaluate(self, request: PromptRequest) -> PromptVerdict:
        self.calls += 1
        if "key?" in str(request.context.get("final_output")):
            return PromptVerdict(ok=False, impossible=True, reason="Ask the user for the deploy key.")
        return PromptVerdict(ok=False, reason="Deploy it first.")


def scripted_gate(store: Store | None = None, **hook: object) -> tuple[StopGate, Scripted]:
    judge = Scripted()
    config = config_from_data(
        {"hooks": {"Stop": [{"prompt": "Done? $ARGUMENTS", "maxRejections": 5, **hook}]}}
    )
    return StopGate(Engine(config, judge=judge), SessionFacts(session_id="s"), store=store), judge


async def test_an_impossible_verdict_stops_the_loop_and_tells_the_user() -> None:
    gate, _ = scripted_gate()
    verdict = await gate.check("Which deploy key?")
    assert (verdict.stop, verdict.forced, verdict.outcome, verdict.feedback) == (
        True,
        False,
        "impossible",
        None,
    )
    assert verdict.notice == (
        "Stop impossible: the judge says this cannot be finished without you: "
        "Ask the user for the deploy key."
    )
    assert gate.rejection_count() == 0  # nothing counted


async def test_a_stalled_loop_stops_in_memory_and_in_a_store(tmp_path: Path) -> None:
    gate, _ = scripted_gate()
    first = await gate.check("Deployed? Not yet.")
    second = await gate.check("deployed?  NOT yet.")
    assert (first.outcome, first.stop, second.outcome, second.stop) == ("rejected", False, "stalled", True)
    assert second.notice is not None and second.notice.startswith(
        "Stop stalled: the agent gave the same answer"
    )
    assert second.notice.endswith("Unresolved: Deploy it first.")
    assert gate.rejection_count() == 0 and (await gate.check("Deployed? Not yet.")).outcome == "rejected"

    store = Store(tmp_path / "state.sqlite")
    durable, _ = scripted_gate(store, repeats=1)
    assert (await durable.check("Not yet.")).outcome == "rejected"
    restarted, _ = scripted_gate(store, repeats=1)  # a restart keeps the loop's last rejection
    assert (await restarted.check("Not yet.")).outcome == "rejected"  # the one repeat tolerated
    assert (await restarted.check("Not yet.")).outcome == "stalled"


async def test_a_stop_while_background_tasks_run_is_deferred() -> None:
    gate, judge = scripted_gate()
    task = {"id": "b1", "type": "shell", "status": "running", "command": "make test"}
    verdict = gate.check_sync("Tests started; I will report back.", background_tasks=[task])
    assert (verdict.stop, verdict.outcome, judge.calls) == (True, "deferred", 0)
    assert verdict.notice == (
        "Stop deferred: 1 prompt hook(s) not run while background tasks run; "
        "the stop after that work ends is judged"
    )
    judging, judge = scripted_gate(backgroundTasks="judge")
    assert (await judging.check("Tests started.", background_tasks=[task])).outcome == "rejected"
    assert judge.calls == 1


async def test_a_hook_error_that_lets_the_stop_through_is_named_in_the_notice() -> None:
    verdict = await StopGate(stop_config()).check("The answer.")
    assert verdict.outcome == "failed_open"
    assert verdict.notice == (
        "Stop failed_open: Stop hook agent[0] (prompt) failed: OPENAI_API_KEY is not set "
        "(needed for openai:gpt-x) -> allow (its failMode)"
    )
