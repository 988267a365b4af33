"""Tool hooks (PreToolUse, PostToolUse, PostToolUseFailure) under the real Claude Code CLI.

Facts of Claude Code 2.1.332 these tests rely on (probed with raw command hooks):

* a ``tool_result`` the model gets next is a block of the following user message; a
  denied PreToolUse call comes back ``is_error: true`` with the
  ``permissionDecisionReason`` as its content;
* ``hookSpecificOutput.updatedToolOutput`` must have the tool's own output shape (the
  ``tool_response`` the hook received): a plain string is ignored and the model sees the
  original output; ``decision: "block"`` alone leaves the tool result as it was and adds a
  system message ``PostToolUse:Bash hook blocking error from command: "...": <reason>``;
* ``additionalContext`` reaches the model as a system message
  ``PostToolUse:Bash hook additional context: <text>``;
* ``PostToolUseFailure`` carries ``error`` (e.g. ``Exit code 3\\n<output>``) and no
  ``tool_response``;
* an MCP tool's ``tool_response`` is its content list; its ``updatedToolOutput`` may be a
  string or such a list;
* ``permissionDecision: "ask"`` is refused under ``-p`` (seen in the default and acceptEdits modes; the
  model gets the reason as an error result); ``updatedInput`` without a permission
  decision is applied and the call then goes through Claude Code's own permission rules;
* when Claude Code's own hook timeout fires, it cancels the hook (a ``hook_cancelled``
  attachment) and runs the tool.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from pathlib import Path

import pytest

from tests.realclient.harness import (
    ClaudeSession,
    command_hook,
    hook_notes,
    record_context,
    recorded,
    tool,
    tool_result_of,
)

pytestmark = pytest.mark.slow

REWRITE = """input=$(cat)
python3 -c '
import json, sys
ctx = json.loads(sys.argv[1])
command = ctx["tool_input"]["command"].replace("original", "rewritten")
updated = dict(ctx["tool_input"], command=command)
print(json.dumps({"decision": "allow", "hookSpecificOutput": {"updatedInput": updated}}))
' "$input"
"""


def _write(session: ClaudeSession, word: str) -> str:
    return f"echo {word} > {session.project / 'out.txt'}"


REASON = "no writes to out.txt today"
DENIERS = {
    "command": command_hook(f'echo "{REASON}" >&2\nexit 2', matcher="Bash"),
    "prompt": {
        "type": "prompt",
        "matcher": "Bash",
        "model": f"fake:block:{REASON}",
        "prompt": "Judge $ARGUMENTS",
    },
}


@pytest.mark.parametrize("kind", sorted(DENIERS))
def test_pretooluse_deny_stops_the_call_and_tells_the_model_why(session: ClaudeSession, kind: str) -> None:
    session.judge_config = {"hooks": {"PreToolUse": [DENIERS[kind]]}}
    result = session.run("write the file", [tool("Bash", "toolu_deny", command=_write(session, "x"))])
    assert result.returncode == 0, result.explain()
    assert not (session.project / "out.txt").exists()
    seen = tool_result_of(result.agent_requests[1], "toolu_deny")
    assert seen is not None and seen.get("is_error") is True
    assert REASON in seen["text"]


def test_pretooluse_rewrite_runs_in_a_headless_session(session: ClaudeSession) -> None:
    """Item 1: a rewrite allowed by the session's permissions runs, rewritten, under -p."""
    session.judge_config = {"hooks": {"PreToolUse": [command_hook(REWRITE, matcher="Bash")]}}
    result = session.run("write the file", [tool("Bash", "toolu_rw", command=_write(session, "original"))])
    assert result.returncode == 0, result.explain()
    seen = tool_result_of(result.agent_requests[1], "toolu_rw")
    assert seen is not None
    assert (session.project / "out.txt").read_text().strip() == "rewritten", seen
    assert seen.get("is_error") is not True


def test_pretooluse_rewrite_does_not_skip_the_permission_prompt(session: ClaudeSession) -> None:
    """Item 1: without a rule allowing the call, the rewrite must not let it through
    (headless Claude Code denies what it would have asked the user about)."""
    session.judge_config = {"hooks": {"PreToolUse": [command_hook(REWRITE, matcher="Bash")]}}
    result = session.run(
        "write the file", [tool("Bash", "toolu_ask", command=_write(session, "original"))], allowed_tools=""
    )
    assert result.returncode == 0, result.explain()
    assert not (session.project / "out.txt").exists()
    seen = tool_result_of(result.agent_requests[1], "toolu_ask")
    assert seen is not None and seen.get("is_error") is True


@pytest.mark.parametrize(("mode", "allowed", "runs"), [("ask", "Bash", False), ("allow", "", True)])
def test_rewrite_modes_chosen_by_the_user(
    session: ClaudeSession, mode: str, allowed: str, runs: bool
) -> None:
    """Item 1, the documented choice: ``--rewrite ask`` asks (so headless sessions refuse
    the call even where a rule allows it); ``--rewrite allow`` runs the rewrite without
    the permission prompt the session would have needed."""
    session.judge_args = ("--rewrite", mode)
    session.judge_config = {"hooks": {"PreToolUse": [command_hook(REWRITE, matcher="Bash")]}}
    reply = tool("Bash", "toolu_mode", command=_write(session, "original"))
    result = session.run("write the file", [reply], allowed_tools=allowed)
    assert result.returncode == 0, result.explain()
    seen = tool_result_of(result.agent_requests[1], "toolu_mode")
    assert seen is not None
    if runs:
        assert (session.project / "out.txt").read_text().strip() == "rewritten"
    else:
        assert not (session.project / "out.txt").exists()
        assert seen.get("is_error") is True


def test_a_hook_that_asks_is_not_an_allow(session: ClaudeSession) -> None:
    """A command hook answering ``permissionDecision: "ask"`` wants the user to confirm;
    judge used to count it as an allow, so a rule allowing Bash ran the call unasked.
    Headless Claude Code cannot ask, so it refuses the call."""
    asks = {
        "hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "Confirm writes."}
    }
    session.judge_config = {
        "hooks": {"PreToolUse": [command_hook(f"echo '{json.dumps(asks)}'", matcher="Bash")]}
    }
    reply = tool("Bash", "toolu_ask", command=_write(session, "x"))
    result = session.run("write the file", [reply], allowed_tools="Bash")
    assert result.returncode == 0, result.explain()
    assert not (session.project / "out.txt").exists()
    seen = tool_result_of(result.agent_requests[1], "toolu_ask")
    assert seen is not None and seen.get("is_error") is True, seen


MCP_TOOL = "mcp__demo__secret"


@pytest.mark.parametrize(
    ("name", "arguments", "secret"),
    [
        ("Bash", {"command": "echo SECRET-OUTPUT-42", "description": "print"}, "SECRET-OUTPUT-42"),
        ("Read", {"file_path": "{project}/notes.txt"}, "SECRET-FILE-LINE"),
        ("Grep", {"pattern": "SECRET", "path": "{project}", "output_mode": "content"}, "SECRET-FILE-LINE"),
        ("Glob", {"pattern": "secret-*.txt", "path": "{project}"}, "secret-name.txt"),
        (MCP_TOOL, {}, "MCP-SECRET-VALUE"),
    ],
)
def test_posttooluse_block_withholds_the_tool_result(
    session: ClaudeSession, name: str, arguments: dict[str, str], secret: str
) -> None:
    """Item 3: the model sees ``[Hook Blocked Tool Result] {reason}``, not the output."""
    (session.project / "notes.txt").write_text("SECRET-FILE-LINE\n")
    (session.project / "secret-name.txt").write_text("")
    args = {k: v.format(project=session.project) for k, v in arguments.items()}
    session.judge_config = {
        "hooks": {"PostToolUse": [command_hook('echo "output has secrets" >&2\nexit 2', matcher=name)]}
    }
    mcp = {
        "mcpServers": {
            "demo": {"command": sys.executable, "args": [str(Path(__file__).with_name("mcp_server.py"))]}
        }
    }
    (session.root / "mcp.json").write_text(json.dumps(mcp))
    result = session.run(
        "look",
        [tool(name, "toolu_post", **args)],
        allowed_tools=f"{name}",
        extra_args=("--mcp-config", str(session.root / "mcp.json")),
    )
    assert result.returncode == 0, result.explain()
    seen = tool_result_of(result.agent_requests[1], "toolu_post")
    assert seen is not None
    assert secret not in seen["text"]
    assert "[Hook Blocked Tool Result] output has secrets" in seen["text"]


def test_a_blocked_write_is_reported_to_the_model(session: ClaudeSession) -> None:
    """Item 3, tools whose result Claude Code words itself (Write, Edit): the block reason
    reaches the model with the next request."""
    session.judge_config = {
        "hooks": {
            "PostToolUse": [command_hook('echo "do not touch config files" >&2\nexit 2', matcher="Write")]
        }
    }
    target = str(session.project / "app.cfg")
    result = session.run("write", [tool("Write", "toolu_write", file_path=target, content="debug = true\n")])
    assert result.returncode == 0, result.explain()
    assert "do not touch config files" in result.agent_requests[1].text


def test_posttooluse_additional_context_reaches_the_model(session: ClaudeSession) -> None:
    answer = '{"decision": "allow", "hookSpecificOutput": {"additionalContext": "CTX-style-guide"}}'
    hook = command_hook(f"cat > /dev/null\necho '{answer}'", matcher="Bash")
    session.judge_config = {"hooks": {"PostToolUse": [hook]}}
    result = session.run("run", [tool("Bash", "toolu_ctx", command="echo visible-output")])
    assert result.returncode == 0, result.explain()
    after = result.agent_requests[1]
    assert "visible-output" in (tool_result_of(after, "toolu_ctx") or {}).get("text", "")
    assert "CTX-style-guide" in hook_notes(after)


def test_failed_tool_calls_are_judged_and_audited(session: ClaudeSession) -> None:
    """Item 6: PostToolUseFailure is judged like a PostToolUse with ``tool_succeeded: false``."""
    session.events = ("PostToolUse", "PostToolUseFailure")
    script = record_context(session.markers, "post") + 'echo "the build failed; read the log" >&2\nexit 2\n'
    session.judge_config = {"hooks": {"PostToolUse": [command_hook(script, matcher="Bash")]}}
    failing = "echo COMPILE-ERROR-LINE; exit 3"
    result = session.run("build", [tool("Bash", "toolu_fail", command=failing, description="build")])
    assert result.returncode == 0, result.explain()
    contexts = recorded(session.markers, "post")
    assert len(contexts) == 1, result.explain()
    assert contexts[0]["tool_succeeded"] is False
    assert "COMPILE-ERROR-LINE" in str(contexts[0].get("tool_result"))
    assert "the build failed; read the log" in result.agent_requests[1].text
    audited = [line for line in session.audit() if "COMPILE-ERROR-LINE" in str(line)]
    assert audited, session.audit()


def _running(token: str) -> list[int]:
    """Processes whose command line holds ``token`` (hooks may run in their own PID
    namespace, so the pid a hook sees for itself means nothing here)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if token in (proc / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(proc.name))
            except OSError:
                continue
    return found


def _slow_hook(session: ClaudeSession) -> tuple[dict[str, object], str]:
    """A hook that says it started and then sleeps for a duration unique to this test."""
    token = f"600.{os.getpid()}{len(str(session.root))}"
    script = f"cat > /dev/null\ntouch {session.markers / 'hook.started'}\nsleep {token}\n"
    return command_hook(script, matcher="Bash", timeout=60), token


def _assert_no_hook_left(session: ClaudeSession, token: str) -> None:
    assert (session.markers / "hook.started").exists(), "the hook never started"
    left = _running(token)
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    assert not left, "the hook's child outlived judge"
    assert not [p.name for p in session.tmp.iterdir() if p.name.startswith("judge-")]


def test_a_slow_pretooluse_policy_is_denied_inside_judges_own_deadline(session: ClaudeSession) -> None:
    """Item 4: with ``--timeout`` below Claude Code's timeout, judge answers (deny) itself."""
    session.judge_args = ("--timeout", "5")
    session.hook_timeout = 30
    session.env["TMPDIR"] = str(session.tmp)
    hook, token = _slow_hook(session)
    session.judge_config = {"hooks": {"PreToolUse": [hook]}}
    result = session.run("write", [tool("Bash", "toolu_slow", command=_write(session, "unchecked"))])
    assert result.returncode == 0, result.explain()
    assert not (session.project / "out.txt").exists(), "the call ran without its policy check"
    seen = tool_result_of(result.agent_requests[1], "toolu_slow")
    assert seen is not None and seen.get("is_error") is True
    _assert_no_hook_left(session, token)


def test_when_claude_codes_timeout_fires_first_judge_leaves_no_debris(session: ClaudeSession) -> None:
    """Item 4: Claude Code kills judge at its own timeout; judge's hook child and its
    temporary files must go with it."""
    session.hook_timeout = 6
    session.env["TMPDIR"] = str(session.tmp)
    hook, token = _slow_hook(session)
    session.judge_config = {"hooks": {"PreToolUse": [hook]}}
    result = session.run("write", [tool("Bash", "toolu_killed", command=_write(session, "x"))])
    assert result.returncode == 0, result.explain()
    _assert_no_hook_left(session, token)


@pytest.mark.parametrize("fails_closed", [True, False])
def test_an_installed_policy_stays_closed_when_judge_cannot_start(
    session: ClaudeSession, fails_closed: bool
) -> None:
    """The installer's ``onFailure: "block"``: judge's interpreter gone (a deleted virtualenv),
    Claude Code itself denies the call; a policy that fails open lets it run."""
    hook = dict(DENIERS["command"], **({} if fails_closed else {"failMode": "allow"}))
    session.judge_config = {"hooks": {"PreToolUse": [hook]}}
    settings = session.install()
    (session.project / ".claude" / "settings.json").unlink()  # only the broken entry below runs
    handler = settings["hooks"]["PreToolUse"][0]["hooks"][0]
    assert ("onFailure" in handler) is fails_closed
    handler["command"] = handler["command"].replace(sys.executable, str(session.tmp / "gone" / "python"), 1)
    result = session.run(
        "write", [tool("Bash", "toolu_gone", command=_write(session, "x"))], settings=settings
    )
    assert result.returncode == 0, result.explain()
    assert (session.project / "out.txt").exists() is not fails_closed
    seen = tool_result_of(result.agent_requests[1], "toolu_gone")
    assert seen is not None and (seen.get("is_error") is True) is fails_closed


@pytest.mark.parametrize("denied", [True, False])
def test_a_slash_commands_shell_command_is_judged_by_the_bash_policy(
    session: ClaudeSession, denied: bool
) -> None:
    """A `` !`cmd` `` line of a slash command (or skill) runs without the Bash tool, so no
    PreToolUse fires for it; Claude Code asks PreSkillShellCommand hooks instead, and judge
    answers those with its PreToolUse hooks."""
    session.events = ("PreToolUse", "PreSkillShellCommand")
    allow = command_hook("cat > /dev/null; exit 0", matcher="Bash")
    session.judge_config = {"hooks": {"PreToolUse": [DENIERS["command"] if denied else allow]}}
    commands = session.project / ".claude" / "commands"
    commands.mkdir(parents=True)
    marker = session.project / "out.txt"
    (commands / "probe.md").write_text(f"Context: !`echo ran > {marker}`\nSay done.\n")
    result = session.run("/probe", [])
    assert result.returncode == 0, result.explain()
    assert marker.exists() is not denied
    notices = [e for e in result.events if e.get("tag") == "skill_shell_hook"]
    if denied:  # Claude Code tells the user: "Not run in /probe: echo ... (blocked by hook: <reason>)"
        assert len(notices) == 1 and REASON in notices[0]["content"], result.explain()
    else:
        assert notices == []
