"""How Stops end under the real Claude Code CLI (2.1.332): a rejection continues the turn
as additional context (the reason once, no command line or paths, no "stop hook problem"
notice), an older Claude Code's session gets ``decision: "block"``, which continues the
turn too, and impossible, stalled and deferred stops end honestly with a notice the user
sees; a skill command rewritten to itself runs, and hooks learn who expanded it."""

from __future__ import annotations

import json
import shlex
from typing import Any

import pytest

from judge.testing import Reply, ToolCallSpec, say
from tests.realclient.harness import (
    SUBAGENT_TASK,
    ClaudeSession,
    RunResult,
    append_rows_command,
    command_hook,
    record_context,
    recorded,
    tool,
)

pytestmark = pytest.mark.slow

REASON = "Run the test suite and paste its summary."


def judge_hook(model: str, **options: Any) -> dict[str, Any]:
    return {"type": "prompt", "model": model, "prompt": "Judge $ARGUMENTS", **options}


def request_text(request: Any) -> str:
    """Everything the model was sent (messages of every role, system prompt, tools)."""
    return json.dumps(request.body, ensure_ascii=False)


def notices(result: RunResult) -> list[str]:
    """The informational lines Claude Code showed (systemMessage is ``Stop says: ...``)."""
    return [str(e.get("content")) for e in result.events if e.get("subtype") == "informational"]


def stop_problem_notices(result: RunResult) -> list[dict[str, Any]]:
    return [
        e for e in result.events if e.get("subtype") == "notification" and e.get("key") == "stop-hook-error"
    ]


def test_a_rejection_reaches_the_agent_once_without_judges_command_line(session: ClaudeSession) -> None:
    session.events = ("Stop",)
    session.judge_config = {"hooks": {"Stop": [judge_hook(f"fake:block:{REASON}", maxRejections=2)]}}
    result = session.run("fix the bug", [say("Fixed, I think.")])
    assert result.returncode == 0, result.explain()
    first, second = result.agent_requests  # sent back once, then forced
    sent = request_text(second)
    assert sent.count(REASON) == 1, sent  # once: no second, system-role copy
    assert "Not finished yet: the Stop check (judge) sends you back to work" in sent
    for private in (
        str(session.config_path),
        str(session.state_path),
        str(session.data),
        "judge claude-code",
    ):
        assert private not in sent  # judge's command line is not shown to the model
    assert REASON not in request_text(first)
    assert stop_problem_notices(result) == []  # no "stop hook problem" for the user
    assert any(
        n.startswith("Stop says: judge: Stop forced: allowed after 2 rejection(s)") for n in notices(result)
    )


def test_an_older_claude_codes_session_is_sent_back_with_a_block(session: ClaudeSession) -> None:
    """judge reads the version from the transcript's rows: a row of 2.1.150 (before Stop's
    additionalContext) makes it answer ``decision: "block"``, which continues the turn on
    every version (here the reason comes twice, with the command line, as Claude Code shows a
    block)."""
    session.events = ("Stop",)
    session.judge_config = {"hooks": {"Stop": [judge_hook(f"fake:block:{REASON}", maxRejections=2)]}}
    row = {"type": "system", "subtype": "note", "version": "2.1.150", "content": "old"}
    append = append_rows_command(row)
    replies = [tool("Bash", "t0", command="true"), tool("Bash", "t1", command=append), say("Fixed, I think.")]
    result = session.run("fix the bug", replies)
    assert result.returncode == 0, result.explain()
    requests = result.agent_requests
    assert len(requests) == 4, result.explain()  # three turns of work, then sent back once
    assert any(r.get("version") == "2.1.150" for r in session.transcript_lines()), result.explain()
    sent = request_text(requests[-1])
    assert sent.count(REASON) == 2 and "Stop hook blocking error from command" in sent
    assert "Not finished yet" not in sent
    assert stop_problem_notices(result), result.explain()


def test_an_impossible_stop_ends_the_turn_and_tells_the_user(session: ClaudeSession) -> None:
    why = "Only you can grant access to the production database."
    session.events = ("Stop",)
    session.judge_config = {"hooks": {"Stop": [judge_hook(f"fake:impossible:{why}")]}}
    result = session.run("migrate the prod schema", [say("I need database access to continue.")])
    assert result.returncode == 0, result.explain()
    assert len(result.agent_requests) == 1  # not sent back
    expected = f"Stop says: judge: Stop impossible: the judge says this cannot be finished without you: {why}"
    assert expected in notices(result), result.explain()
    assert stop_problem_notices(result) == []


def test_a_stalled_loop_ends_at_the_first_identical_repeat(session: ClaudeSession) -> None:
    session.events = ("Stop",)
    session.judge_config = {"hooks": {"Stop": [judge_hook(f"fake:block:{REASON}", maxRejections=5)]}}
    result = session.run("fix the bug", [say("Fixed, I think."), say("fixed, I  think.")])
    assert result.returncode == 0, result.explain()
    assert len(result.agent_requests) == 2, result.explain()  # sent back once, not four times
    stalled = [n for n in notices(result) if n.startswith("Stop says: judge: Stop stalled:")]
    assert len(stalled) == 1 and stalled[0].endswith(f"Unresolved: {REASON}"), result.explain()


def test_a_stop_while_a_background_task_runs_is_judged_after_it(session: ClaudeSession) -> None:
    session.events = ("Stop",)
    hooks = [
        judge_hook(f"fake:block:{REASON}", maxRejections=1),
        command_hook(record_context(session.markers, "s")),
    ]
    session.judge_config = {"hooks": {"Stop": hooks}}
    background = tool(
        "Bash", "toolu_bg", command="sleep 3; echo finished", description="slow build", run_in_background=True
    )
    result = session.run("build it", [background, say("The build is running; I will report when it ends.")])
    assert result.returncode == 0, result.explain()
    seen = [len(c.get("background_tasks") or []) for c in recorded(session.markers, "s")]
    assert seen[0] == 1 and seen[-1] == 0, seen  # a Stop while it ran, and one after it ended
    shown = notices(result)
    deferred = [n for n in shown if n.startswith("Stop says: judge: Stop deferred: 1 prompt hook(s) not run")]
    assert deferred, result.explain()
    assert any(n.startswith("Stop says: judge: Stop forced") for n in shown), result.explain()  # judged later


def test_a_skill_command_rewritten_to_itself_runs(session: ClaudeSession) -> None:
    session.events = ("PreToolUse", "PreSkillShellCommand")
    keep = (
        "import json,sys; c=json.load(sys.stdin); "
        "print(json.dumps({'decision': 'allow', 'updatedInput': c['tool_input']}))"
    )
    hook = command_hook(
        record_context(session.markers, "pre")
        + f"python3 -c {shlex.quote(keep)} < {session.markers}/pre-$n.json\n",
        matcher="Bash",
    )
    session.judge_config = {"hooks": {"PreToolUse": [hook]}}
    commands = session.project / ".claude" / "commands"
    commands.mkdir(parents=True)
    marker = session.project / "out.txt"
    (commands / "probe.md").write_text(f"Context: !`echo ran > {marker}`\nSay done.\n")
    result = session.run("/probe", [])
    assert result.returncode == 0, result.explain()
    assert marker.exists(), result.explain()  # not "the hook changed the command"
    assert [e for e in result.events if e.get("tag") == "skill_shell_hook"] == []
    (seen,) = recorded(session.markers, "pre")
    assert seen["invoked_by"] == "user" and seen["command_name"] == "probe"


def test_a_subagent_is_sent_back_once_with_additional_context(session: ClaudeSession) -> None:
    """SubagentStop answers in the same form (``hookEventName: "SubagentStop"``): the
    subagent, not the main agent, continues with the reason once."""
    session.events = ("SubagentStop",)
    reason = "Also update the module's tests."
    session.judge_config = {"hooks": {"SubagentStop": [judge_hook(f"fake:block:{reason}", maxRejections=2)]}}
    prompt = f"{SUBAGENT_TASK} Refactor the module."
    arguments = {"description": "refactor", "prompt": prompt, "subagent_type": "general-purpose"}
    task = ToolCallSpec("Agent", {**arguments, "run_in_background": False}, id="toolu_task")
    result = session.run(
        "refactor via a subagent",
        [Reply(text="Delegating.", tool_calls=(task,)), say("Main agent done.")],
        subagent_replies=[say("Refactored."), say("Refactored, tests updated.")],
    )
    assert result.returncode == 0, result.explain()
    subagent = [r for r in result.requests if SUBAGENT_TASK in r.text and r.body.get("tools")]
    assert len(subagent) == 2, result.explain()  # sent back once, then forced
    sent = request_text(subagent[1])
    assert sent.count(reason) == 1 and "Not finished yet: the Stop check (judge)" in sent
    assert "judge claude-code" not in sent and str(session.config_path) not in sent
    assert all(reason not in request_text(r) for r in result.agent_requests if SUBAGENT_TASK not in r.text)
