"""`judge claude-code` when the adapter itself cannot do its work: unusable hook input, a
damaged state file, an unwritable audit log, an install over hand-broken settings. Each
is told, and the configured failMode decides - never a silent pass of a checked call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from judge.integrations.claude_code.fast_path import MAX_STDIN_BYTES

PRE_BASH = "hooks:\n  PreToolUse:\n    - type: command\n      matcher: Bash\n      command: 'exit 0'\n"
STOP_BLOCKING = (
    "hooks:\n  Stop:\n    - type: command\n      failMode: block\n"
    '      command: \'echo "{\\"decision\\": \\"allow\\"}"\'\n'
)


def claude_code(tmp_path: Path, config: str, payload: Any, *extra: str, **env_extra: str) -> tuple[Any, str]:
    """Run the adapter as Claude Code does: (the JSON it printed or None, its stderr)."""
    path = tmp_path / "judge.yaml"
    path.write_text(config)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("JUDGE_")}
    env.pop("CLAUDE_PID", None)  # (tests run inside a Claude Code session are not hooks of it)
    env["JUDGE_STATE"] = str(tmp_path / "state" / "state.sqlite")
    env.update(env_extra)
    stdin = payload if isinstance(payload, str) else json.dumps(payload)
    args = [sys.executable, "-m", "judge", "claude-code", "--config", str(path), *extra]
    proc = subprocess.run(args, input=stdin, capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return (json.loads(proc.stdout) if proc.stdout.strip() else None), proc.stderr


def denied(out: Any) -> str:
    specific = out["hookSpecificOutput"]
    assert specific["hookEventName"] == "PreToolUse" and specific["permissionDecision"] == "deny"
    return str(specific["permissionDecisionReason"])


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"session_id": 123}, "session_id: Input should be a valid string"),
        ({"tool_use_id": 5}, "tool_use_id: Input should be a valid string"),
        ({"tool_name": None}, "PreToolUse without a tool_name"),
    ],
)
def test_a_checked_call_with_unusable_input_is_denied(
    tmp_path: Path, change: dict[str, Any], problem: str
) -> None:
    payload = {"hook_event_name": "PreToolUse", "session_id": "s", "tool_name": "Bash", "tool_input": {}}
    out, err = claude_code(tmp_path, PRE_BASH, {**payload, **change})
    assert problem in denied(out) and "blocking (failMode)" in err


def test_unusable_input_for_a_call_no_hook_checks_passes(tmp_path: Path) -> None:
    payload = {"hook_event_name": "PreToolUse", "session_id": 1, "tool_name": "Read", "tool_input": {}}
    out, err = claude_code(tmp_path, PRE_BASH, payload)
    assert out is None and "not blocking (no hook for it)" in err


def test_unusable_stop_input_is_told_to_the_user(tmp_path: Path) -> None:
    config = "hooks:\n  Stop:\n    - type: command\n      command: 'exit 0'\n"
    out, _ = claude_code(tmp_path, config, {"hook_event_name": "Stop", "stop_hook_active": "maybe"})
    assert out == {"systemMessage": out["systemMessage"]}
    assert "stop_hook_active" in out["systemMessage"] and out["systemMessage"].endswith("not checked")


def test_an_input_over_the_size_limit_is_named_as_such(tmp_path: Path) -> None:
    big = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"x": "a" * MAX_STDIN_BYTES}}
    out, _ = claude_code(tmp_path, PRE_BASH, big)
    assert f"hook input larger than {MAX_STDIN_BYTES} bytes" in denied(out)


def test_a_damaged_state_file_blocks_a_stop_whose_hook_says_failmode_block(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "state.sqlite").write_text("this is not a database\n" * 100)
    payload = {"hook_event_name": "Stop", "session_id": "s", "stop_hook_active": False}
    out, _ = claude_code(tmp_path, STOP_BLOCKING, payload)
    assert out["decision"] == "block" and out["reason"].startswith("Hook error: unexpected failure")
    allowing = STOP_BLOCKING.replace("failMode: block", "failMode: allow")
    out, _ = claude_code(tmp_path, allowing, {**payload, "session_id": "s2"})  # a session keeps its config
    assert "decision" not in out and out["systemMessage"].endswith("not checked")


def test_a_slow_shadow_hook_never_denies(tmp_path: Path) -> None:
    config = (
        "hooks:\n  PreToolUse:\n    - type: command\n      matcher: Bash\n      mode: shadow\n"
        "      timeout: 30\n      command: 'sleep 20'\n"
    )
    payload = {"hook_event_name": "PreToolUse", "session_id": "s", "tool_name": "Bash", "tool_input": {}}
    out, _ = claude_code(tmp_path, config, payload, "--timeout", "2")
    assert "hookSpecificOutput" not in out and "did not finish" in out["systemMessage"]


def test_an_unwritable_audit_log_keeps_the_decision_and_says_so(tmp_path: Path) -> None:
    config = (
        "hooks:\n  PostToolUse:\n    - type: command\n      matcher: Bash\n"
        '      command: \'echo "{\\"decision\\": \\"block\\", \\"reason\\": \\"secret in output\\"}"\'\n'
    )
    data = tmp_path / "data"
    (data / "audit_log.jsonl").mkdir(parents=True)  # a directory where the log file goes
    payload = {
        "hook_event_name": "PostToolUse",
        "session_id": "s",
        "tool_name": "Bash",
        "tool_input": {"command": "env"},
        "tool_response": {"stdout": "KEY=123", "stderr": "", "interrupted": False},
    }
    out, err = claude_code(tmp_path, config, payload, "--data-dir", str(data))
    assert out["decision"] == "block" and "secret in output" in out["reason"]
    assert "could not write the audit log" in out["systemMessage"] and "could not write the audit log" in err


def test_install_over_a_hooks_event_that_is_not_a_list_says_what_to_fix(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"hooks": {"PreToolUse": {"a": 1}}}))
    (tmp_path / "judge.yaml").write_text(PRE_BASH)
    args = [sys.executable, "-m", "judge", "claude-code", "install", "--config", "judge.yaml"]
    proc = subprocess.run(args, capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert '"hooks.PreToolUse" is not a JSON array of matcher groups' in proc.stderr
    assert json.loads(settings.read_text()) == {"hooks": {"PreToolUse": {"a": 1}}}  # untouched


def test_a_huge_transcript_without_newlines_does_not_outlive_the_deadline(tmp_path: Path) -> None:
    transcript = tmp_path / "session.jsonl"
    with transcript.open("wb") as out:
        out.truncate(1 << 30)  # 1 GiB, sparse: one line that never ends
    payload = {"hook_event_name": "Stop", "session_id": "s", "transcript_path": str(transcript)}
    payload["last_assistant_message"] = "Done."
    started = time.monotonic()
    out, _ = claude_code(tmp_path, STOP_BLOCKING, payload, "--timeout", "2")
    assert time.monotonic() - started < 15
    assert out == {
        "decision": "block",
        "reason": "Hook error: judge did not finish within its --timeout of 2 s",
        "systemMessage": "judge: Stop failed_closed: Hook error: judge did not finish within its "
        "--timeout of 2 s",
    }


def skill_command(command: str) -> dict[str, Any]:
    return {
        "hook_event_name": "PreSkillShellCommand",
        "session_id": "s",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_use_id": "u1:inner:preamble-0",
        "command_name": "deploy",
        "command_source": "projectSettings",
    }


def test_a_skills_shell_command_is_judged_by_the_pre_tool_use_hooks(tmp_path: Path) -> None:
    recorder = (
        "hooks:\n  PreToolUse:\n    - type: command\n      matcher: Bash\n      script: |\n"
        "        #!/usr/bin/env python3\n        import json, sys\n        ctx = json.load(sys.stdin)\n"
        "        ok = 'rm ' not in ctx['tool_input']['command']\n"
        "        seen = ctx['hook_event_name'] + ' ' + ctx['command_name'] + ' ' + ctx['command_source']\n"
        "        print(json.dumps({'ok': ok, 'reason': 'no rm in skills (' + seen + ')'}))\n"
    )
    out, _ = claude_code(tmp_path, recorder, skill_command("rm -rf build"))
    assert out == {
        "hookSpecificOutput": {
            "hookEventName": "PreSkillShellCommand",
            "permissionDecision": "deny",
            "permissionDecisionReason": "no rm in skills (PreToolUse deploy projectSettings)",
        }
    }
    out, _ = claude_code(tmp_path, recorder, skill_command("ls"))
    assert out is None


def test_a_rewrite_of_a_skills_shell_command_is_a_denial_that_says_so(tmp_path: Path) -> None:
    answer = json.dumps(json.dumps({"decision": "allow", "updatedInput": {"command": "ls -l"}}))
    rewriter = (
        f"hooks:\n  PreToolUse:\n    - type: command\n      matcher: Bash\n      command: 'echo {answer}'\n"
    )
    out, _ = claude_code(tmp_path, rewriter, skill_command("ls"))
    specific = out["hookSpecificOutput"]
    assert specific["hookEventName"] == "PreSkillShellCommand" and specific["permissionDecision"] == "deny"
    assert (
        "cannot be rewritten" in specific["permissionDecisionReason"]
        and "ls -l" in specific["permissionDecisionReason"]
    )


DEEP = "[" * 5000 + "]" * 5000


@pytest.mark.parametrize("spoof", ["", '"tool_name": "Read", ', '"hook_event_name": "Notification", '])
def test_an_unreadable_input_cannot_name_another_tool_or_event_in_its_own_tool_input(
    tmp_path: Path, spoof: str
) -> None:
    config = (
        "hooks:\n  PreToolUse:\n    - type: command\n      matcher: mcp__db__query\n      command: 'exit 0'\n"
    )
    payload = (
        '{"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "mcp__db__query", '
        f'"tool_input": {{{spoof}"sql": {DEEP}}}}}'
    )
    out, _ = claude_code(tmp_path, config, payload)
    assert "nested too deeply" in denied(out)


def test_unusable_input_for_a_custom_agents_checked_call_is_denied(tmp_path: Path) -> None:
    config = (
        "customAgents:\n  reviewer:\n    hooks:\n      PreToolUse:\n"
        "        - type: command\n          matcher: Bash\n          command: 'exit 0'\n"
    )
    payload = {
        "hook_event_name": "PreToolUse",
        "session_id": 1,
        "agent_type": "reviewer",
        "tool_name": "Bash",
    }
    out, _ = claude_code(tmp_path, config, payload)
    assert "session_id" in denied(out)
    unknown = {**payload, "agent_type": ["not", "a", "name"]}  # any custom agent's hooks may apply
    out, _ = claude_code(tmp_path, config, unknown)
    assert "agent_type" in denied(out)


def test_unusable_input_and_an_unusable_configuration_deny_a_tool_call(tmp_path: Path) -> None:
    payload = {"hook_event_name": "PreToolUse", "session_id": 1, "tool_name": "Bash", "tool_input": {}}
    out, _ = claude_code(tmp_path, "hooks: [not, a, mapping]\n", payload)
    assert "session_id" in denied(out) and "unusable" in denied(out)
