"""Claude Code transcript rendering: attachments, long tool output, summaries, resumable state,
lines of an unexpected shape."""

from __future__ import annotations

import json
from typing import Any

import pytest

from judge.transcripts.claude_code import (
    TOOL_RESULT_HEAD_LINES,
    TOOL_RESULT_TAIL_LINES,
    ClaudeCodeRenderer,
    render_claude_code_lines,
)


def jl(*rows: Any) -> list[str]:
    return [json.dumps(r) for r in rows]


def render(*rows: Any) -> str:
    return "\n".join(render_claude_code_lines(jl(*rows)))


def test_a_blocking_hook_error_attachment_is_shown_with_its_hook_and_reason() -> None:
    text = render(
        {
            "type": "attachment",
            "attachment": {
                "type": "hook_blocking_error",
                "hookName": "PostToolUse:Bash",
                "hookEvent": "PostToolUse",
                "blockingError": {"blockingError": "lint failed:\nE501 line too long", "command": "lint.sh"},
            },
        },
        # Older shape: the error as a plain string.
        {
            "type": "attachment",
            "attachment": {
                "type": "hook_blocking_error",
                "hookEvent": "Stop",
                "blockingError": "tests missing",
            },
        },
    )
    assert "HOOK BLOCKED (PostToolUse PostToolUse:Bash): lint failed:\n    E501 line too long" in text
    assert "HOOK BLOCKED (Stop): tests missing" in text


def test_hook_context_and_queued_input_are_shown_and_noise_is_dropped() -> None:
    text = render(
        {
            "type": "attachment",
            "attachment": {
                "type": "hook_additional_context",
                "hookEvent": "PostToolUse",
                "content": ["audited: 3 files", "second block"],
            },
        },
        {"type": "attachment", "attachment": {"type": "queued_command", "prompt": "also update the docs"}},
        {"type": "attachment", "attachment": {"type": "skill_listing", "content": "- skill-a: does a"}},
        {"type": "attachment", "attachment": {"type": "environment", "content": "platform: linux"}},
        {"type": "attachment", "attachment": {"type": "session_context", "content": "git status: clean"}},
        {"type": "attachment", "attachment": {"type": "hook_success", "hookEvent": "Stop", "content": "ok"}},
        {"type": "attachment", "attachment": "not a mapping"},
        {"type": "attachment", "attachment": {"type": "something_new", "content": "new kind of note"}},
    )
    assert "HOOK CONTEXT (PostToolUse): audited: 3 files\n    second block" in text
    assert "USER (queued while working): also update the docs" in text
    assert "skill-a" not in text and ": ok" not in text
    assert "platform" not in text and "git status" not in text
    assert "ATTACHMENT (something_new): new kind of note" in text


def test_long_tool_output_keeps_head_and_tail_with_a_note() -> None:
    log = "\n".join(f"compile step {i}" for i in range(562))
    text = render(
        {
            "type": "assistant",
            "message": {"content": [{"type": "tool_use", "id": "t", "name": "Bash", "input": {}}]},
        },
        {
            "type": "user",
            "message": {"content": [{"type": "tool_result", "tool_use_id": "t", "content": log}]},
        },
    )
    lines = text.splitlines()
    cut = 562 - TOOL_RESULT_HEAD_LINES - TOOL_RESULT_TAIL_LINES
    assert lines[1] == "TOOL RESULT Bash [t]: compile step 0"
    assert f"    [... {cut} lines omitted ...]" in lines
    assert lines[-1] == "    compile step 561"  # the failing end of the log is kept
    assert f"    compile step {TOOL_RESULT_HEAD_LINES}" not in lines
    assert len(lines) == 2 + TOOL_RESULT_HEAD_LINES + TOOL_RESULT_TAIL_LINES


def test_short_tool_output_is_kept_whole() -> None:
    out = "\n".join(f"l{i}" for i in range(TOOL_RESULT_HEAD_LINES + TOOL_RESULT_TAIL_LINES))
    text = render({"type": "user", "message": {"content": [{"type": "tool_result", "content": out}]}})
    assert "omitted" not in text and text.count("\n") == TOOL_RESULT_HEAD_LINES + TOOL_RESULT_TAIL_LINES - 1


def test_summary_of_another_session_is_labelled_and_one_of_this_session_is_not() -> None:
    text = render(
        {"type": "summary", "summary": "Some other work", "leafUuid": "elsewhere"},
        {"type": "file-history-snapshot", "snapshot": {}},
        {"type": "user", "uuid": "u1", "message": {"content": "hi"}},
        {"type": "summary", "summary": "Greeting", "leafUuid": "u1"},
    )
    assert "SUMMARY (of another session, not this conversation): Some other work" in text
    assert "\nSUMMARY: Greeting" in text


def test_only_recent_tool_calls_are_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    from judge.transcripts import claude_code as claude_code_transcript

    monkeypatch.setattr(claude_code_transcript, "MAX_REMEMBERED_TOOL_CALLS", 2)
    renderer = ClaudeCodeRenderer()
    for i in range(3):
        use = {"type": "tool_use", "id": f"t{i}", "name": f"Tool{i}", "input": {}}
        renderer.feed(json.dumps({"type": "assistant", "message": {"content": [use]}}))
    assert list(renderer.tool_names) == ["t1", "t2"]
    result = {"type": "tool_result", "tool_use_id": "t2", "content": "x"}
    assert renderer.feed(json.dumps({"type": "user", "message": {"content": [result]}})) == [
        "TOOL RESULT Tool2 [t2]: x"
    ]


@pytest.mark.parametrize("split", [0, 1, 3, 5])
def test_a_renderer_resumed_from_its_state_renders_exactly_as_one_pass(split: int) -> None:
    rows = jl(
        {"type": "summary", "summary": "other", "leafUuid": "zz"},
        {"type": "user", "uuid": "u1", "sessionId": "s", "version": "2.1.1", "message": {"content": "go"}},
        {
            "type": "assistant",
            "uuid": "a1",
            "message": {
                "id": "m1",
                "content": [
                    {"type": "text", "text": "Part one."},
                    {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "x"}},
                ],
            },
        },
        {
            "type": "user",
            "uuid": "u2",
            "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]},
        },
        {
            "type": "assistant",
            "uuid": "a2",
            "message": {"id": "m1", "content": [{"type": "text", "text": "Part two."}]},
        },
        {"type": "summary", "summary": "this one", "leafUuid": "a1"},
    )
    whole = ClaudeCodeRenderer()
    expected = [line for raw in rows for line in whole.feed(raw)]
    first = ClaudeCodeRenderer()
    got = [line for raw in rows[:split] for line in first.feed(raw)]
    state = json.loads(json.dumps(first.state()))  # survives a round trip through JSON
    second = ClaudeCodeRenderer.from_state(state)
    got += [line for raw in rows[split:] for line in second.feed(raw)]
    assert got == expected
    assert second.last_assistant_text == whole.last_assistant_text == "Part one.\nPart two."
    assert "TOOL RESULT Read [t1]: x" in got


def test_a_broken_state_is_refused() -> None:
    with pytest.raises(ValueError, match="not a renderer state"):
        ClaudeCodeRenderer.from_state({"tool_names": {}})


REASON = "Run the tests: 1 failed."


def relayed_feedback() -> dict[str, Any]:
    """Claude Code 2.1.332: a Stop block's reason, relayed to the agent as a meta user turn."""
    message = {"role": "user", "content": f"Stop hook feedback:\n{REASON}"}
    return {"type": "user", "message": message, "isMeta": True, "rowSource": "hook", "hookText": True}


def blocking_error(reason: str) -> dict[str, Any]:
    error = {"blockingError": reason, "command": "judge claude-code"}
    attachment = {"type": "hook_blocking_error", "hookName": "Stop", "hookEvent": "Stop"}
    attachment["blockingError"] = error
    return {"type": "attachment", "attachment": attachment}


def test_relayed_hook_feedback_is_not_the_users_words_and_is_shown_once() -> None:
    text = render(relayed_feedback(), blocking_error(REASON), blocking_error("Another hook's reason."))
    assert text.splitlines() == [
        "HOOK FEEDBACK (relayed to the agent): Stop hook feedback:",
        f"    {REASON}",
        "HOOK BLOCKED (Stop): Another hook's reason.",
    ]


def test_older_meta_feedback_is_recognised_and_other_meta_turns_stay_user() -> None:
    older = relayed_feedback()
    del older["rowSource"], older["hookText"]
    message = {"role": "user", "content": "<local-command-caveat>x"}
    caveat = {"type": "user", "isMeta": True, "message": message}
    text = render(older, caveat)
    assert text.splitlines()[0] == "HOOK FEEDBACK (relayed to the agent): Stop hook feedback:"
    assert "USER (meta): <local-command-caveat>x" in text


def test_a_resumed_render_still_shows_the_feedback_once() -> None:
    first = ClaudeCodeRenderer()
    assert first.feed(json.dumps(relayed_feedback()))
    state = json.loads(json.dumps(first.state()))
    assert ClaudeCodeRenderer.from_state(state).feed(json.dumps(blocking_error(REASON))) == []
    del state["last_feedback"]  # a state written before it was kept
    assert ClaudeCodeRenderer.from_state(state).feed(json.dumps(blocking_error(REASON))) == [
        f"HOOK BLOCKED (Stop): {REASON}"
    ]


def test_a_stop_hook_summary_tells_blocks_from_failures() -> None:
    def summary(**fields: Any) -> str:
        return render({"type": "system", "subtype": "stop_hook_summary", "hookCount": 2, **fields})

    errors = ["Failed with non-blocking status code: broken hook", "[check.sh]: please run the tests"]
    newer = summary(hookErrors=errors, failedHookErrorIndexes=[0], preventedContinuation=False)
    assert newer.endswith(": 2 Stop hook(s) ran, prevented continuation: no, blocked: 1, failed: 1")
    assert summary(hookErrors=errors[1:], failedHookErrorIndexes=[]).endswith("blocked: 1, failed: 0")
    assert summary(hookErrors=errors, failedHookErrorIndexes=[0, 0, 7, "x"]).endswith("blocked: 1, failed: 1")
    older = summary(hookErrors=errors)  # releases before failedHookErrorIndexes: no telling
    assert older.endswith("prevented continuation: no, errors: 2")


def test_user_rows_claude_code_wrote_are_labelled_by_their_origin() -> None:
    notification = {
        "type": "user",
        "message": {
            "role": "user",
            "content": "<task-notification><status>completed</status></task-notification>",
        },
        "origin": {"kind": "task-notification", "producer": "session-task"},
        "rowSource": "recorded",
    }
    task = {
        "type": "user",
        "isSidechain": True,
        "rowSource": "recorded",
        "message": {"role": "user", "content": "Summarise the logs."},
    }
    human = {"type": "user", "origin": {"kind": "human"}, "message": {"role": "user", "content": "Hi."}}
    assert render(notification, task, human).splitlines() == [
        "TASK NOTIFICATION (from Claude Code, not the user): "
        "<task-notification><status>completed</status></task-notification>",
        "[subagent] TASK FROM THE PARENT AGENT: Summarise the logs.",
        "USER: Hi.",
    ]


def test_the_header_skips_queue_operations_for_the_line_that_has_version_and_cwd() -> None:
    queued = {"type": "queue-operation", "operation": "enqueue", "sessionId": "s1", "content": "go"}
    first = {
        "type": "user",
        "sessionId": "s1",
        "version": "2.1.332",
        "cwd": "/work",
        "message": {"role": "user", "content": "go"},
    }
    assert render(queued, first).splitlines() == [
        "=== Claude Code session s1 · Claude Code 2.1.332 · cwd /work ===",
        "USER: go",
    ]


def test_claude_code_transcript_line_with_a_non_string_type_is_skipped() -> None:
    renderer = ClaudeCodeRenderer()
    for odd in ('{"type": ["user"]}', '{"type": {"k": 1}}'):
        assert renderer.feed(odd) == []
    line = '{"type": "user", "message": {"role": "user", "content": "hello"}}'
    assert any("hello" in out for out in renderer.feed(line) + renderer.flush())
