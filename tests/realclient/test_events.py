"""Events judge does not serve must not break a real Claude Code session (item 7).

Fact of Claude Code 2.1.332: a ``WorktreeCreate`` command hook that exits 0 without
printing a path makes ``claude --worktree NAME -p ...`` exit 1 ("WorktreeCreate hook
failed: hook succeeded but returned no worktree path"), so judge must never be
registered there.
"""

from __future__ import annotations

import subprocess

import pytest

from tests.realclient.harness import ClaudeSession, command_hook, record_context, recorded

pytestmark = pytest.mark.slow

#: Claude Code events judge has no hooks for; registered there, it must stay a no-op.
UNHANDLED = ("SessionStart", "UserPromptSubmit", "Notification", "PreCompact", "SubagentStart", "SessionEnd")


def _git_init(session: ClaudeSession) -> None:
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q", "."], cwd=session.project, check=True, timeout=30)
    subprocess.run(
        [*git, "commit", "-q", "--allow-empty", "-m", "init"], cwd=session.project, check=True, timeout=30
    )


def test_the_installer_keeps_worktree_sessions_working(session: ClaudeSession) -> None:
    _git_init(session)
    session.judge_config = {"hooks": {"Stop": [command_hook(record_context(session.markers, "stop"))]}}
    settings = session.install()
    assert "WorktreeCreate" not in settings["hooks"] and "WorktreeRemove" not in settings["hooks"]
    result = session.run("hello", [], extra_args=("--worktree", "judge-test"), settings=settings)
    assert result.returncode == 0, result.explain()
    assert len(recorded(session.markers, "stop")) == 1, "the installed Stop hook did not run"


def test_judge_registered_on_events_it_does_not_handle_is_a_no_op(session: ClaudeSession) -> None:
    session.events = (*UNHANDLED, "Stop")
    session.judge_config = {"hooks": {"Stop": [command_hook(record_context(session.markers, "stop"))]}}
    result = session.run("hello", [])
    assert result.returncode == 0, result.explain()
    # stream-json reports SessionStart hooks; the transcript keeps an attachment per hook error.
    responses = [e for e in result.events if e.get("subtype") == "hook_response"]
    assert responses, result.explain()
    for event in responses:
        assert event.get("outcome") == "success" and event.get("exit_code") == 0, event
        assert not event.get("stdout"), event
    kinds = [
        line["attachment"].get("type", "") for line in session.transcript_lines() if "attachment" in line
    ]
    assert not [kind for kind in kinds if "error" in kind], kinds
    assert len(recorded(session.markers, "stop")) == 1
