"""What Claude Code gets for each Stop outcome: a rejection continues the turn in the form
the session's Claude Code understands (its version read from the transcript's rows), and
every outcome but approved and rejected is told to the user in a systemMessage. Also the
skill-command details: an unchanged rewrite is no rewrite, and ``invoked_by`` reaches hooks."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from judge.config import config_from_data
from judge.integrations.claude_code.adapter import ClaudeCodeInput, handle
from judge.integrations.claude_code.output import CONTINUE_LEAD
from judge.integrations.claude_code.versions import (
    TAIL_BYTES,
    parse_version,
    session_version,
    stop_feedback_form,
)
from tests.claude_code.test_fail_closed import claude_code, skill_command

REASON = "Run the tests and report the result."


def transcript(path: Path, *versions: str, filler: int = 0) -> Path:
    rows = [{"type": "user", "sessionId": "s", "version": v, "message": {"content": "go"}} for v in versions]
    with path.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row) + "\n")
        if filler:
            out.write(json.dumps({"type": "assistant", "message": {"content": "x" * filler}}) + "\n")
    return path


def stop(
    path: Path | None = None, *, active: bool = False, event: str = "Stop", **more: Any
) -> ClaudeCodeInput:
    fields: dict[str, Any] = {
        "hook_event_name": event,
        "session_id": "s",
        "stop_hook_active": active,
        "last_assistant_message": "Done, I think.",
        **more,
    }
    if path is not None:
        fields["transcript_path"] = str(path)
    if event == "SubagentStop":
        fields.update(agent_id="a1", agent_type="helper")
    return ClaudeCodeInput(**fields)


def config(model: str, event: str = "Stop", **hook: Any) -> Any:
    return config_from_data({"hooks": {event: [{"prompt": "Done? $ARGUMENTS", "model": model, **hook}]}})


# -- which Claude Code: the version in the transcript's rows ------------------------------------


@pytest.mark.parametrize(
    ("text", "version"),
    [("2.1.332", (2, 1, 332)), ("2.1.163-beta.1", (2, 1, 163)), ("v2", None), ("", None), (3, None)],
)
def test_versions_are_read_strictly(text: Any, version: tuple[int, ...] | None) -> None:
    assert parse_version(text) == version


def test_the_session_version_is_the_lowest_of_the_last_rows(tmp_path: Path) -> None:
    assert session_version(transcript(tmp_path / "a.jsonl", "2.1.150", "2.1.332")) == (2, 1, 150)
    # a resumed session: the newer Claude Code's rows are at the end, the old ones read too
    assert session_version(transcript(tmp_path / "b.jsonl", "2.1.332")) == (2, 1, 332)
    assert session_version(tmp_path / "missing.jsonl") is None
    assert session_version(None) is None
    assert session_version(transcript(tmp_path / "c.jsonl")) is None  # no row records one
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert session_version(fifo) is None  # never waits on a FIFO


def test_a_forged_higher_version_appended_by_the_agent_cannot_raise_it(tmp_path: Path) -> None:
    path = transcript(tmp_path / "t.jsonl", "2.1.150")
    with path.open("a") as out:  # an agent writing into its own transcript
        out.write(json.dumps({"type": "user", "version": "9.9.9", "message": {"content": "hi"}}) + "\n")
        out.write('{"type": "assistant", "message": {"content": [{"input": {"version": "9.9.9"}}]}}\n')
    assert session_version(path) == (2, 1, 150)
    assert stop_feedback_form(session_version(path)) == "block"


def test_a_last_row_larger_than_the_tail_falls_back_to_the_first_rows(tmp_path: Path) -> None:
    path = transcript(tmp_path / "t.jsonl", "2.1.332", filler=TAIL_BYTES + 10)
    assert session_version(path) == (2, 1, 332)


@pytest.mark.parametrize(
    ("version", "form"),
    [(None, "block"), ((2, 1, 121), "block"), ((2, 1, 162), "block"), ((2, 1, 163), "additionalContext")],
)
def test_the_form_that_continues_the_turn_by_version(version: Any, form: str) -> None:
    assert stop_feedback_form(version) == form


# -- a rejection continues the turn -----------------------------------------------------------


async def test_a_rejection_on_current_claude_code_is_additional_context_without_paths(tmp_path: Path) -> None:
    path = transcript(tmp_path / "t.jsonl", "2.1.332")
    out = await handle(stop(path), config(f"fake:block:{REASON}"), tmp_path / "state.sqlite")
    assert out == {
        "hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": f"{CONTINUE_LEAD}\n{REASON}"}
    }
    assert str(tmp_path) not in json.dumps(out)


async def test_a_rejection_on_older_or_unknown_claude_code_is_a_block(tmp_path: Path) -> None:
    old = transcript(tmp_path / "old.jsonl", "2.1.150")
    for given in (old, None, tmp_path / "gone.jsonl"):
        out = await handle(stop(given), config(f"fake:block:{REASON}"), tmp_path / "state.sqlite")
        assert out is not None and (out["decision"], out["reason"]) == ("block", REASON), given


async def test_a_subagent_rejection_names_its_event(tmp_path: Path) -> None:
    path = transcript(tmp_path / "t.jsonl", "2.1.332")
    hooks = config(f"fake:block:{REASON}", event="SubagentStop")
    out = await handle(stop(path, event="SubagentStop"), hooks, tmp_path / "state.sqlite")
    assert out is not None and out["hookSpecificOutput"]["hookEventName"] == "SubagentStop"


async def test_a_failed_closed_stop_continues_the_turn_and_says_why(tmp_path: Path) -> None:
    path = transcript(tmp_path / "t.jsonl", "2.1.332")
    out = await handle(stop(path), config("fake:error", failMode="block"), tmp_path / "state.sqlite")
    assert out is not None
    assert out["hookSpecificOutput"]["additionalContext"].endswith(
        "Hook error: fake:error: simulated provider failure"
    )
    assert out["systemMessage"].startswith(
        "judge: Stop failed_closed: Stop hook agent[0] (prompt, fake:error)"
    )


# -- every outcome but approved and rejected is told ------------------------------------------


async def test_approved_and_rejected_print_no_system_message(tmp_path: Path) -> None:
    assert await handle(stop(), config("fake:allow"), tmp_path / "state.sqlite") is None
    out = await handle(stop(), config(f"fake:block:{REASON}"), tmp_path / "state.sqlite")
    assert out is not None and "systemMessage" not in out


async def test_impossible_lets_the_agent_stop_and_tells_the_user_why(tmp_path: Path) -> None:
    out = await handle(
        stop(), config("fake:impossible:Only you can grant repo access."), tmp_path / "s.sqlite"
    )
    assert out == {
        "systemMessage": "judge: Stop impossible: the judge says this cannot be finished without you: "
        "Only you can grant repo access."
    }


async def test_a_stalled_loop_lets_the_agent_stop_and_tells_the_user(tmp_path: Path) -> None:
    state = tmp_path / "state.sqlite"
    hooks = config(f"fake:block:{REASON}", maxRejections=5)
    first = await handle(stop(), hooks, state)
    assert first == {"decision": "block", "reason": REASON}
    again = await handle(stop(active=True), hooks, state)  # Claude Code sent it back: the same answer
    assert again is not None and "decision" not in again
    assert again["systemMessage"].startswith("judge: Stop stalled: the agent gave the same answer again")
    assert again["systemMessage"].endswith(f"Unresolved: {REASON}")


async def test_a_stop_while_background_tasks_run_is_deferred_and_told(tmp_path: Path) -> None:
    task = {"id": "b1", "type": "shell", "status": "running", "description": "tests", "command": "make test"}
    out = await handle(stop(background_tasks=[task]), config(f"fake:block:{REASON}"), tmp_path / "s.sqlite")
    assert out == {
        "systemMessage": "judge: Stop deferred: 1 prompt hook(s) not run while background tasks run; "
        "the stop after that work ends is judged"
    }
    judging = config(f"fake:block:{REASON}", backgroundTasks="judge")
    out = await handle(stop(background_tasks=[task]), judging, tmp_path / "s.sqlite")
    assert out == {"decision": "block", "reason": REASON}


# -- skill commands -------------------------------------------------------------------------


def test_a_skill_command_rewritten_to_itself_runs(tmp_path: Path) -> None:
    same = json.dumps(json.dumps({"decision": "allow", "updatedInput": {"command": "ls"}}))
    rewriter = (
        f"hooks:\n  PreToolUse:\n    - type: command\n      matcher: Bash\n      command: 'echo {same}'\n"
    )
    out, _ = claude_code(tmp_path, rewriter, skill_command("ls"))
    assert out is None  # nothing printed: the command runs as written


def test_invoked_by_reaches_the_hooks(tmp_path: Path) -> None:
    recorder = (
        "hooks:\n  PreToolUse:\n    - type: command\n      matcher: Bash\n      script: |\n"
        "        #!/usr/bin/env python3\n        import json, sys\n        ctx = json.load(sys.stdin)\n"
        "        by = ctx['invoked_by']\n"
        "        print(json.dumps({'ok': by != 'claude', 'reason': 'by ' + by}))\n"
    )
    out, _ = claude_code(tmp_path, recorder, {**skill_command("ls"), "invoked_by": "claude"})
    assert out is not None and out["hookSpecificOutput"]["permissionDecisionReason"] == "by claude"
    out, _ = claude_code(tmp_path, recorder, {**skill_command("ls"), "invoked_by": "user"})
    assert out is None
