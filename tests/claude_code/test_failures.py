"""A hook that could not decide is never silent in Claude Code: the answer carries a
systemMessage naming it and what its failMode made of it (an allow would otherwise print
nothing, and Claude Code shows a hook's stderr only in verbose mode). Nor is an adapter that
cannot use its state location."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from judge.config import config_from_data
from judge.hooks.judging import PromptRequest, PromptVerdict
from judge.integrations.claude_code.adapter import ClaudeCodeInput, handle
from tests.claude_code.test_adapter import run_adapter, stop_payload
from tests.claude_code.test_adapter import write_config as write_cc_config
from tests.claude_code.test_fail_closed import claude_code


def stop_input() -> ClaudeCodeInput:
    return ClaudeCodeInput(
        hook_event_name="Stop", session_id="s", last_assistant_message="Done.", stop_hook_active=False
    )


def hooks(*entries: dict[str, Any]) -> Any:
    return config_from_data({"hooks": {"Stop": list(entries)}})


async def test_an_allow_because_the_judge_failed_says_so(tmp_path: Path) -> None:
    config = hooks({"prompt": "Done? $ARGUMENTS", "model": "fake:error"})
    out = await handle(stop_input(), config, tmp_path / "state.sqlite")
    assert out is not None and "decision" not in out
    message = out["systemMessage"]
    assert message.startswith(
        "judge: Stop failed_open: Stop hook agent[0] (prompt, fake:error) could not run: "
    )
    assert message.endswith("-> allow (its failMode)")


async def test_a_block_by_failmode_is_told_too(tmp_path: Path) -> None:
    config = hooks({"prompt": "Done? $ARGUMENTS", "model": "fake:error", "failMode": "block"})
    out = await handle(stop_input(), config, tmp_path / "state.sqlite")
    assert out is not None and out["decision"] == "block" and out["reason"].startswith("Hook error")
    assert out["systemMessage"].startswith(
        "judge: Stop failed_closed: Stop hook agent[0] (prompt, fake:error)"
    )
    assert out["systemMessage"].endswith("-> block (its failMode)")


async def test_working_and_shadow_hooks_add_nothing(tmp_path: Path) -> None:
    config = hooks(
        {"prompt": "Done? $ARGUMENTS", "model": "fake:allow"},
        {"prompt": "Done? $ARGUMENTS", "model": "fake:error", "mode": "shadow"},
    )
    assert await handle(stop_input(), config, tmp_path / "state.sqlite") is None


async def test_many_failures_are_counted_not_listed(tmp_path: Path) -> None:
    config = hooks(*[{"prompt": f"Check {i}. $ARGUMENTS", "model": "fake:error"} for i in range(5)])
    out = await handle(stop_input(), config, tmp_path / "state.sqlite")
    assert out is not None
    assert out["systemMessage"].count("could not run") == 3 and out["systemMessage"].endswith("; and 2 more")


def test_a_crashing_post_tool_use_script_is_told(tmp_path: Path) -> None:
    script = "#!/usr/bin/env python3\\nraise SystemExit('checker crashed')\\n"
    config = (
        "hooks:\n  PostToolUse:\n    - type: command\n      matcher: Bash\n      failMode: allow\n"
        f'      script: "{script}"\n'
    )
    payload = {
        "session_id": "s",
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
        "tool_response": {"stdout": "a\n", "stderr": "", "interrupted": False},
    }
    out, _ = claude_code(tmp_path, config, payload)
    assert "decision" not in out
    assert out["systemMessage"].startswith("judge: PostToolUse hook agent[0] (command) could not run: ")
    assert "-> allow (its failMode)" in out["systemMessage"]


async def test_a_judge_that_times_out_is_named_with_its_model(tmp_path: Path) -> None:
    class Hanging:
        async def evaluate(self, request: PromptRequest) -> PromptVerdict:
            await asyncio.sleep(3600)
            raise AssertionError("not reached")

    config = hooks({"prompt": "Done? $ARGUMENTS", "model": "openai:slow-model", "timeout": 1})
    out = await handle(stop_input(), config, tmp_path / "state.sqlite", judge=Hanging())
    assert out is not None
    assert out["systemMessage"] == (
        "judge: Stop failed_open: Stop hook agent[0] (prompt, openai:slow-model) could not run: "
        "timed out after 1s -> allow (its failMode)"
    )


def stop_with_transcript(path: Path) -> ClaudeCodeInput:
    return ClaudeCodeInput(
        hook_event_name="Stop", session_id="s", last_assistant_message="Done.", transcript_path=str(path)
    )


async def test_a_judge_without_its_transcript_says_so(tmp_path: Path) -> None:
    missing = tmp_path / "gone.jsonl"
    config = hooks({"prompt": "Done? $ARGUMENTS", "model": "fake:allow"})
    out = await handle(stop_with_transcript(missing), config, tmp_path / "state.sqlite")
    assert out == {"systemMessage": f"judge: transcript {missing} not found; judged without it"}


async def test_an_unreadable_transcript_is_told_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import contextlib

    import judge.transcripts.render_cache as render_cache
    from judge.transcripts.render_cache import RenderError

    @contextlib.contextmanager
    def unreadable(source: Path | None, cache_dir: Path | None, cancel: Any) -> Iterator[tuple[None, None]]:
        raise RenderError(f"cannot read transcript {source}: [Errno 13] Permission denied")
        yield None, None

    monkeypatch.setattr(render_cache, "rendered_transcript", unreadable)
    session = tmp_path / "session.jsonl"
    session.write_text("{}\n")
    config = hooks({"prompt": "Done? $ARGUMENTS", "model": "fake:block:Not done."})
    out = await handle(stop_with_transcript(session), config, tmp_path / "state.sqlite")
    assert out == {
        "decision": "block",
        "reason": "Not done.",
        "systemMessage": f"judge: cannot read transcript {session}: [Errno 13] Permission denied; "
        "judged without it",
    }


async def test_command_hooks_alone_do_not_mention_the_transcript(tmp_path: Path) -> None:
    config = hooks({"type": "command", "script": "#!/bin/bash\nexit 0\n"})
    assert (
        await handle(stop_with_transcript(tmp_path / "gone.jsonl"), config, tmp_path / "state.sqlite") is None
    )


def test_claude_code_adapter_with_an_unwritable_state_location(tmp_path: Path) -> None:
    config = write_cc_config(
        tmp_path,
        {"hooks": {"Stop": [{"type": "prompt", "prompt": "Done? $ARGUMENTS", "model": "fake:block:more"}]}},
    )
    blocker = tmp_path / "state-dir"
    blocker.write_text("a file where the state folder should be")
    proc = run_adapter(
        tmp_path, stop_payload("s-1", False), config, {"JUDGE_STATE": str(blocker / "state.sqlite")}
    )
    assert proc.returncode == 0
    out = json.loads(proc.stdout)
    assert set(out) == {"systemMessage"}  # the stop goes through, and the user is told why
    assert "not checked" in out["systemMessage"] and str(blocker) in out["systemMessage"]
    assert proc.stderr.startswith("judge claude-code: ") and str(blocker) in proc.stderr
