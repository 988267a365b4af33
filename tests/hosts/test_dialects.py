"""Each host's dialect: its hook input read into judge's terms, judge's answer in the host's form."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from judge.integrations.hosts.codex import DIALECT as CODEX
from judge.integrations.hosts.copilot import DIALECT as COPILOT
from judge.integrations.hosts.cursor import DIALECT as CURSOR
from judge.integrations.hosts.dialect import HostCall, HostInputError, Verdict
from judge.integrations.hosts.gemini import DIALECT as GEMINI
from tests.hosts import payloads


def test_codex_input_maps_to_judges_events(tmp_path: Path) -> None:
    stop = CODEX.parse(payloads.codex("Stop", tmp_path))
    assert (stop.event, stop.final_output, stop.new_loop) == ("Stop", "Wrote a.txt.", True)
    assert stop.extra == {"turn_id": "01a241bb-1664-7243-97f8-83a67207673b"}
    again = CODEX.parse(payloads.codex("Stop", tmp_path, stop_hook_active=True))
    assert again.stop_hook_active and not again.new_loop
    post = CODEX.parse(payloads.codex("PostToolUse", tmp_path))
    assert (post.event, post.tool_name, post.tool_result) == ("PostToolUse", "Bash", "hello\n")
    sub = CODEX.parse(
        payloads.codex(
            "SubagentStop",
            tmp_path,
            agent_id="a1",
            agent_type="reviewer",
            agent_transcript_path=str(tmp_path / "sub.jsonl"),
            last_assistant_message="LGTM",
            stop_hook_active=False,
        )
    )
    assert (sub.event, sub.agent_type, sub.transcript_path) == (
        "SubagentStop",
        "reviewer",
        str(tmp_path / "sub.jsonl"),
    )
    assert CODEX.parse(payloads.codex("SessionStart", tmp_path, source="startup")).event is None


def test_gemini_input_maps_to_judges_events(tmp_path: Path) -> None:
    stop = GEMINI.parse(payloads.gemini("AfterAgent", tmp_path))
    assert (stop.event, stop.final_output, stop.extra) == ("Stop", "Wrote a.txt.", {"prompt": "create a.txt"})
    pre = GEMINI.parse(payloads.gemini("BeforeTool", tmp_path))
    assert (pre.event, pre.tool_name) == ("PreToolUse", "run_shell_command")
    failed = GEMINI.parse(
        payloads.gemini("AfterTool", tmp_path, tool_response={"llmContent": "", "error": "boom"})
    )
    assert (failed.event, failed.tool_succeeded, failed.tool_error) == ("PostToolUse", False, "boom")


def test_copilot_reads_both_of_its_input_forms(tmp_path: Path) -> None:
    vscode = COPILOT.parse(payloads.copilot("PostToolUse", tmp_path))
    native = COPILOT.parse(payloads.copilot_native("postToolUse", tmp_path), "postToolUse")
    for call in (vscode, native):
        assert call.event == "PostToolUse"
        assert call.tool_result == "hello\n<shellId: 0 completed with exit code 0>"
    assert (vscode.tool_name, vscode.shape) == ("Bash", "claude")
    assert (native.tool_name, native.shape) == ("bash", "native")
    # A camelCase input without --event: its fields tell the event.
    assert COPILOT.parse(payloads.copilot_native("agentStop", tmp_path)).event == "Stop"
    assert COPILOT.parse(payloads.copilot_native("preToolUse", tmp_path)).event == "PreToolUse"
    sub = COPILOT.parse({"sessionId": "s", "agentType": "explore", "response": "found it"}, "subagentStop")
    assert (sub.event, sub.final_output, sub.agent_type) == ("SubagentStop", "found it", "explore")
    failure = COPILOT.parse(
        {
            **payloads.copilot("PreToolUse", tmp_path),
            "hook_event_name": "PostToolUseFailure",
            "error": "exit 1",
        }
    )
    assert (failure.event, failure.tool_succeeded, failure.tool_result) == ("PostToolUse", False, "exit 1")


def test_cursor_input_from_its_documentation_maps_to_judges_events(tmp_path: Path) -> None:
    stop = CURSOR.parse(payloads.cursor("stop", tmp_path))
    assert (stop.event, stop.session_id, stop.new_loop, stop.skip) == (
        "Stop",
        "cdefee2d-2727-4b73-bf77-d9d830f31d2a",
        True,
        None,
    )
    assert stop.final_output is None  # Cursor sends no text of the answer
    followed = CURSOR.parse(payloads.cursor("stop", tmp_path, loop_count=2))
    assert followed.stop_hook_active and not followed.new_loop
    aborted = CURSOR.parse(payloads.cursor("stop", tmp_path, status="aborted"))
    assert aborted.skip is not None and "aborted" in aborted.skip
    post = CURSOR.parse(payloads.cursor("postToolUse", tmp_path))
    assert (post.event, post.tool_name, post.cwd) == ("PostToolUse", "Shell", str(tmp_path))


@pytest.mark.parametrize(
    ("dialect", "data", "problem"),
    [
        (CODEX, {"session_id": "s"}, "no hook_event_name"),
        (
            CODEX,
            {"hook_event_name": "Stop", "stop_hook_active": "yes"},
            "stop_hook_active must be true or false",
        ),
        (CODEX, {"hook_event_name": "PreToolUse", "session_id": "s"}, "PreToolUse without a tool name"),
        (GEMINI, {"hook_event_name": "AfterAgent", "prompt_response": 3}, "prompt_response must be a string"),
        (COPILOT, {"cwd": "/"}, "no --event"),
        (CURSOR, {"hook_event_name": "stop", "loop_count": -1}, "loop_count must be a count"),
    ],
)
def test_unusable_input_is_refused_with_the_field_named(
    dialect: Any, data: dict[str, Any], problem: str
) -> None:
    with pytest.raises(HostInputError, match=problem):
        dialect.parse(data)


def _call(dialect: Any, host_event: str, event: str, **more: Any) -> HostCall:
    return HostCall(host_event=host_event, event=event, **more)


def test_a_stop_rejection_in_each_hosts_form() -> None:
    sent_back = Verdict(block="Run the tests.")
    assert CODEX.render(_call(CODEX, "Stop", "Stop"), sent_back) == {
        "decision": "block",
        "reason": "Run the tests.",
    }
    assert GEMINI.render(_call(GEMINI, "AfterAgent", "Stop"), sent_back) == {
        "decision": "block",
        "reason": "Run the tests.",
    }
    assert COPILOT.render(_call(COPILOT, "Stop", "Stop"), sent_back) == {
        "decision": "block",
        "reason": "Run the tests.",
    }
    assert CURSOR.render(_call(CURSOR, "stop", "Stop"), sent_back) == {"followup_message": "Run the tests."}
    for dialect, event in ((CODEX, "Stop"), (GEMINI, "AfterAgent"), (COPILOT, "Stop"), (CURSOR, "stop")):
        assert dialect.render(_call(dialect, event, "Stop"), Verdict()) is None  # allowed: nothing printed


def test_a_tool_denial_in_each_hosts_form() -> None:
    denied = Verdict(block="POLICY: no rm")
    assert CODEX.render(_call(CODEX, "PreToolUse", "PreToolUse"), denied) == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "POLICY: no rm",
        }
    }
    assert GEMINI.render(_call(GEMINI, "BeforeTool", "PreToolUse"), denied) == {
        "decision": "deny",
        "reason": "POLICY: no rm",
    }
    native = COPILOT.render(_call(COPILOT, "preToolUse", "PreToolUse"), denied)
    assert native == {"permissionDecision": "deny", "permissionDecisionReason": "POLICY: no rm"}
    vscode = COPILOT.render(_call(COPILOT, "PreToolUse", "PreToolUse", shape="claude"), denied)
    assert vscode is not None and vscode["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert CURSOR.render(_call(CURSOR, "preToolUse", "PreToolUse"), denied) == {
        "permission": "deny",
        "user_message": "POLICY: no rm",
        "agent_message": "POLICY: no rm",
    }


def test_a_withheld_result_and_added_context_in_each_hosts_form() -> None:
    withheld = Verdict(block="secrets", additional_context="Check the exit code.")
    assert CODEX.render(_call(CODEX, "PostToolUse", "PostToolUse"), withheld) == {
        "decision": "block",
        "reason": "[Hook Blocked Tool Result] secrets",
        "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "Check the exit code."},
    }
    assert GEMINI.render(_call(GEMINI, "AfterTool", "PostToolUse"), withheld) == {
        "decision": "deny",
        "reason": "[Hook Blocked Tool Result] secrets",
        "hookSpecificOutput": {"hookEventName": "AfterTool", "additionalContext": "Check the exit code."},
    }
    assert COPILOT.render(_call(COPILOT, "PostToolUse", "PostToolUse"), withheld) == {
        "modifiedResult": {"resultType": "success", "textResultForLlm": "[Hook Blocked Tool Result] secrets"},
        "additionalContext": "Check the exit code.",
    }
    # A failed call's result (Copilot) and any result (Cursor) cannot be replaced: the model is told.
    failed = COPILOT.render(_call(COPILOT, "PostToolUseFailure", "PostToolUse"), withheld)
    assert failed == {"additionalContext": "[Hook Blocked Tool Result] secrets\nCheck the exit code."}
    told = CURSOR.render(_call(CURSOR, "postToolUse", "PostToolUse"), withheld)
    assert told is not None and told["additional_context"].startswith("[Hook Blocked Tool Result] secrets")


def test_notes_reach_the_user_where_the_host_shows_them() -> None:
    noted = Verdict(notes=["stop forced after 3 rejection(s)"])
    assert CODEX.render(_call(CODEX, "Stop", "Stop"), noted) == {
        "systemMessage": "judge: stop forced after 3 rejection(s)"
    }
    assert GEMINI.render(_call(GEMINI, "AfterAgent", "Stop"), noted) == {
        "systemMessage": "judge: stop forced after 3 rejection(s)"
    }
    assert COPILOT.render(_call(COPILOT, "Stop", "Stop"), noted) is None  # Copilot shows none: stderr only


def test_rewrites_in_the_hosts_that_take_them() -> None:
    rewrite = Verdict(updated_input={"command": "ls -la"})
    assert GEMINI.render(_call(GEMINI, "BeforeTool", "PreToolUse"), rewrite) == {
        "hookSpecificOutput": {"hookEventName": "BeforeTool", "tool_input": {"command": "ls -la"}}
    }
    assert COPILOT.render(_call(COPILOT, "preToolUse", "PreToolUse"), rewrite) == {
        "modifiedArgs": {"command": "ls -la"}
    }
    assert CURSOR.render(_call(CURSOR, "preToolUse", "PreToolUse"), rewrite) == {
        "updated_input": {"command": "ls -la"}
    }
    codex = CODEX.render(_call(CODEX, "PreToolUse", "PreToolUse"), rewrite)  # only with --rewrite allow
    assert codex is not None and codex["hookSpecificOutput"]["permissionDecision"] == "allow"
