from __future__ import annotations

import json
from pathlib import Path

from judge.transcripts import detect_format, prepare_transcript, render_lines

TAU = [
    {
        "task_id": 7,
        "reward": 1.0,
        "trial": 0,
        "info": {},
        "traj": [
            {"role": "system", "content": "Policy"},
            {"role": "user", "content": "Cancel reservation ABC."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "cancel", "arguments": '{"id": "ABC"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "name": "cancel", "content": "cancelled"},
            {"role": "assistant", "content": "Your reservation is cancelled."},
        ],
    }
]


def test_plain_text_is_used_as_is(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("user: hi\nassistant: hello\n")
    assert detect_format(path) == "text"
    assert prepare_transcript(path) == path


def test_tau_bench_json(tmp_path):
    path = tmp_path / "tau.json"
    path.write_text(json.dumps(TAU))
    assert detect_format(path) == "json"
    rendered = prepare_transcript(path)
    text = rendered.read_text()
    assert text.startswith("=== task 7 (trial 0, reward 1.0) ===\n[1] system:\nPolicy\n")
    assert '→ tool call cancel({"id": "ABC"}) [call_1]' in text
    assert "[4] tool result cancel [call_1]:\ncancelled" in text
    assert "[5] assistant:\nYour reservation is cancelled." in text
    assert prepare_transcript(path) == rendered  # cached


def test_message_list_and_messages_object(tmp_path):
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"messages": TAU[0]["traj"]}))
    assert "[2] user:" in "\n".join(render_lines(path))
    path.write_text(json.dumps(TAU[0]["traj"]))
    assert "[2] user:" in "\n".join(render_lines(path))


def test_generic_jsonl_with_anthropic_blocks(tmp_path):
    path = tmp_path / "t.jsonl"
    lines = [
        {"role": "user", "content": "Search the logs"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Searching."},
                {"type": "tool_use", "id": "toolu_1", "name": "grep", "input": {"q": "err"}},
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "2 hits"}]},
        {"event": "metrics", "n": 3},
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\nnot json\n")
    assert detect_format(path) == "jsonl"
    text = "\n".join(render_lines(path))
    assert '→ tool call grep({"q": "err"}) [toolu_1]' in text
    assert "← tool result [toolu_1]:\n2 hits" in text
    assert '{"event": "metrics", "n": 3}' in text
    assert text.rstrip().endswith("not json")


def test_claude_code_jsonl_is_detected_and_rendered(tmp_path):
    path = tmp_path / "session.jsonl"
    lines = [
        {"type": "file-history-snapshot", "messageId": "m"},
        {"type": "user", "sessionId": "s", "message": {"role": "user", "content": "Write a poem"}},
        {
            "type": "assistant",
            "sessionId": "s",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "Here it is."}]},
        },
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    assert detect_format(path) == "claude-code"
    text = prepare_transcript(path).read_text()
    assert "Write a poem" in text and "Here it is." in text


def test_changed_source_is_rendered_again(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"role": "user", "content": "one"}) + "\n")
    first = prepare_transcript(path).read_text()
    path.write_text(json.dumps({"role": "user", "content": "two, longer"}) + "\n")
    assert "two, longer" in prepare_transcript(path).read_text() and "one" in first


def test_brace_text_that_is_not_json_is_text(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("{not json at all\nsecond line\n")
    assert detect_format(path) == "text"


def test_removing_a_private_transcript_removes_its_rendered_copy(tmp_path):
    from judge.service.app import remove_private
    from judge.transcripts import prepare_transcript

    source = tmp_path / "inline.jsonl"
    source.write_text('{"role": "user", "content": "secret plan"}\n', encoding="utf-8")
    rendered = prepare_transcript(source)
    assert rendered != source and "secret plan" in rendered.read_text(encoding="utf-8")
    remove_private(source)
    assert not source.exists() and not rendered.exists()
    remove_private(source)  # already gone: nothing to do, no error


def _deep(levels: int) -> str:
    return "[" * levels + "]" * levels


def test_a_line_nested_too_deeply_is_left_out_and_the_rest_is_rendered(tmp_path):
    # An agent controls its tool inputs: one nested at will must not stop the judge reading.
    lines = [
        {"type": "user", "sessionId": "s", "message": {"role": "user", "content": "Fix it"}},
        '{"type": "assistant", "sessionId": "s", "message": {"role": "assistant", "content": ['
        '{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"x": ' + _deep(5000) + "}}]}}",
        {"type": "assistant", "sessionId": "s", "message": {"role": "assistant", "content": "TODO later"}},
    ]
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    assert list(render_lines(path)) == [
        "=== Claude Code session s ===",
        "USER: Fix it",
        "[line 2: nested too deeply to render, skipped]",
        "ASSISTANT: TODO later",
    ]
    generic = tmp_path / "generic.jsonl"
    generic.write_text(json.dumps({"role": "user", "content": "hi"}) + "\n" + _deep(5000) + "\n")
    rendered = list(render_lines(generic))
    assert (
        rendered[0] == "[1] user:"
        and rendered[-1] == "[a transcript entry nested too deeply to render was left out]"
    )


def test_a_json_transcript_holding_a_surrogate_escape_is_rendered(tmp_path: Path) -> None:
    source = tmp_path / "t.jsonl"
    rows = [{"role": "user", "content": "add tests"}, {"role": "tool", "content": "bad byte \ud800 here"}]
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert "\\ud800" in source.read_text(encoding="utf-8")  # json.dumps escapes it
    text = prepare_transcript(source).read_text(encoding="utf-8")
    assert "add tests" in text and "bad byte ? here" in text
