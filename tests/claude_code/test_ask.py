"""A PreToolUse command hook that answers ``permissionDecision: "ask"`` gets the user asked.

Before, "ask" counted as an allow: Claude Code's own rules then decided, and a call the
hook's author wanted confirmed ran unasked wherever those rules allowed it.
"""

from __future__ import annotations

import json
from typing import Any

from judge.hooks.answers import answer_from_object
from judge.integrations.claude_code.output import ASK_REASON
from tests.claude_code.test_fail_closed import claude_code, denied

ASK = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask"}}


def hook(answer: dict[str, Any], **options: Any) -> str:
    extra = "".join(f"\n      {key}: {value}" for key, value in options.items())
    command = f"echo {json.dumps(json.dumps(answer))}"
    return f"    - type: command\n      matcher: Bash{extra}\n      command: '{command}'\n"


def config(*hooks: str) -> str:
    return "hooks:\n  PreToolUse:\n" + "".join(hooks)


def pre(event: str = "PreToolUse") -> dict[str, Any]:
    return {
        "hook_event_name": event,
        "session_id": "s",
        "tool_name": "Bash",
        "tool_input": {"command": "rm -r build"},
    }


def with_reason(reason: str) -> dict[str, Any]:
    specific = {**ASK["hookSpecificOutput"], "permissionDecisionReason": reason}
    return {"hookSpecificOutput": specific}


def test_ask_is_an_allow_that_asks() -> None:
    answer = answer_from_object(with_reason("Deletes files."))
    assert (answer.decision, answer.ask, answer.reason) == ("allow", True, "Deletes files.")
    assert answer_from_object({"decision": "allow"}).ask is False


def test_claude_code_asks_the_user_with_the_hooks_reason(tmp_path) -> None:
    out, _ = claude_code(tmp_path, config(hook(with_reason("Deletes files."))), pre())
    specific = out["hookSpecificOutput"]
    assert specific["permissionDecision"] == "ask"
    assert specific["permissionDecisionReason"] == "Deletes files."
    out, _ = claude_code(tmp_path, config(hook(ASK)), {**pre(), "session_id": "s2"})
    assert out["hookSpecificOutput"]["permissionDecisionReason"] == ASK_REASON


def test_a_later_denial_wins_and_a_shadow_hook_never_asks(tmp_path) -> None:
    deny = {"decision": "block", "reason": "Never delete."}
    out, _ = claude_code(tmp_path, config(hook(ASK), hook(deny)), pre())
    assert denied(out) == "Never delete."
    out, _ = claude_code(tmp_path, config(hook(ASK, mode="shadow")), {**pre(), "session_id": "s2"})
    assert out is None


def test_a_skills_shell_command_cannot_be_asked_about_so_it_is_denied(tmp_path) -> None:
    out, _ = claude_code(tmp_path, config(hook(with_reason("Deletes files."))), pre("PreSkillShellCommand"))
    specific = out["hookSpecificOutput"]
    assert specific["hookEventName"] == "PreSkillShellCommand" and specific["permissionDecision"] == "deny"
    assert "Deletes files." in specific["permissionDecisionReason"]
    assert "cannot ask" in specific["permissionDecisionReason"]
