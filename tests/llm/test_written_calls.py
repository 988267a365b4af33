"""Recognising tool calls a model writes as text, and validating their arguments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judge.llm.tools import TranscriptTools
from judge.llm.written_calls import (
    RESULTS_HEADER,
    TextToolCall,
    find_text_tool_calls,
    results_message,
    text_tools_enabled,
    validate_arguments,
)


@pytest.fixture(scope="module")
def specs(tmp_path_factory: pytest.TempPathFactory):
    path: Path = tmp_path_factory.mktemp("t") / "t.txt"
    path.write_text("hello\n")
    return TranscriptTools(path).specs()


READ_ARGS = {"filePath": "t.txt", "startLine": 1, "endLine": 50}
READ = json.dumps({"name": "ReadFile", "arguments": READ_ARGS})


@pytest.mark.parametrize(
    "text",
    [
        f"```json\n{READ}\n```",
        f"I will read the transcript first.\n```\n{READ}\n```\nThen I decide.",
        f"<tool_call>\n{READ}\n</tool_call>",
        READ,
        READ.replace('"arguments"', '"parameters"'),
        json.dumps({"name": "ReadFile", "arguments": json.dumps(READ_ARGS)}),
    ],
    ids=["fenced-json", "fenced-in-prose", "tool-call-tags", "bare", "parameters-key", "arguments-as-string"],
)
def test_every_written_form_is_recognised(specs, text):
    assert find_text_tool_calls(text, specs) == [
        TextToolCall("ReadFile", {"filePath": "t.txt", "startLine": 1, "endLine": 50})
    ]


def test_several_calls_in_order(specs):
    text = (
        '<tool_call>{"name": "GrepSearch", "arguments": {"query": "error", "isRegexp": false}}</tool_call>\n'
        f"<tool_call>{READ}</tool_call>"
    )
    assert [c.name for c in find_text_tool_calls(text, specs)] == ["GrepSearch", "ReadFile"]


@pytest.mark.parametrize(
    "text",
    [
        '{"ok": true}',
        '{"ok": false, "reason": "Run the tests."}',
        '{"name": "execute_shell", "arguments": {"command": "ls"}}',
        '{"name": "readfile", "arguments": {}}',
        '{"tool": "ReadFile", "args": {"startLine": 1}}',
        "Call ReadFile with startLine 1.",
        '{"name": "ReadFile", "arguments": {"filePath": "t.txt",',
    ],
    ids=["verdict", "block-verdict", "foreign-tool", "wrong-case", "other-shape", "prose", "truncated"],
)
def test_anything_else_is_not_a_call(specs, text):
    assert find_text_tool_calls(text, specs) == []


def test_without_tools_nothing_is_a_call():
    assert find_text_tool_calls(READ, []) == []


def test_whole_floats_become_integers(specs):
    (found,) = find_text_tool_calls(
        '{"name": "ReadFile", "arguments": {"filePath": "t", "startLine": 1.0, "endLine": 20.0}}', specs
    )
    assert found.error is None and found.arguments == {"filePath": "t", "startLine": 1, "endLine": 20}
    assert isinstance(found.arguments["startLine"], int)


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"filePath": "t", "startLine": 1}, "missing endLine"),
        ({"filePath": "t", "startLine": "one", "endLine": 5}, "startLine must be integer, got string"),
        ({"filePath": "t", "startLine": True, "endLine": 5}, "startLine must be integer, got boolean"),
        ({"filePath": "t", "startLine": 1, "endLine": 5, "lines": 3}, "unknown lines"),
        ({"filePath": 7, "startLine": 1, "endLine": 5}, "filePath must be string, got integer"),
    ],
)
def test_arguments_are_checked_against_the_schema(specs, arguments, expected):
    read = next(s for s in specs if s.name == "ReadFile")
    problem = validate_arguments(read, arguments)
    assert problem is not None and expected in problem
    assert "filePath (string), startLine (integer), endLine (integer)" in problem


def test_valid_arguments_pass(specs):
    grep = next(s for s in specs if s.name == "GrepSearch")
    assert validate_arguments(grep, {"query": "x", "isRegexp": False}) is None
    assert validate_arguments(grep, {"query": "x", "isRegexp": True, "maxResults": 5}) is None


def test_a_call_with_bad_arguments_carries_the_error(specs):
    (found,) = find_text_tool_calls('{"name": "GrepSearch", "arguments": {"isRegexp": false}}', specs)
    assert found.name == "GrepSearch" and found.error is not None and "missing query" in found.error
    (found,) = find_text_tool_calls('{"name": "GrepSearch", "arguments": ["x"]}', specs)
    assert found.error is not None and "must be a JSON object" in found.error


def test_results_message_labels_each_result():
    calls = [
        TextToolCall("GrepSearch", {"query": "x", "isRegexp": False}),
        TextToolCall("ReadFile", {}, "bad"),
    ]
    text = results_message(calls, ["1: x", "Error: bad"])
    assert text.startswith(RESULTS_HEADER)
    assert '[1] GrepSearch {"query": "x", "isRegexp": false}:\n1: x' in text
    assert "[2] ReadFile {}:\nError: bad" in text
    assert "verdict JSON object" in text.splitlines()[-1]


@pytest.mark.parametrize(
    ("value", "enabled"), [(None, True), ("1", True), ("0", False), ("off", False), ("False", False)]
)
def test_switch(value, enabled):
    env = {} if value is None else {"JUDGE_TEXT_TOOL_CALLS": value}
    assert text_tools_enabled(env) is enabled
