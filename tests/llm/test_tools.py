from __future__ import annotations

import time
import tracemalloc

import pytest

from judge.llm.tools import MAX_OUTPUT_CHARS, TranscriptTools


@pytest.fixture
def tools(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("".join(f"Line {i} {'ERROR' if i % 10 == 0 else 'ok'}\n" for i in range(1, 1001)))
    return TranscriptTools(path)


def test_tool_specs_come_from_signatures_and_docstrings(tools):
    read, grep = tools.specs()
    assert read.name == "ReadFile" and read.parameters["required"] == ["filePath", "startLine", "endLine"]
    assert read.parameters["properties"]["startLine"] == {
        "type": "integer",
        "description": "First line to read, 1-based.",
    }
    assert "1-based" in read.description and "first ~100 lines" in read.description
    assert grep.name == "GrepSearch" and grep.parameters["required"] == ["query", "isRegexp"]
    assert grep.parameters["properties"]["maxResults"]["default"] == 20
    assert grep.parameters["properties"]["isRegexp"]["type"] == "boolean"


def test_read_file_window_is_numbered_and_inclusive(tools):
    out = tools.ReadFile(str(tools.path), 5, 7)
    assert out.splitlines()[1:4] == ["     5\tLine 5 ok", "     6\tLine 6 ok", "     7\tLine 7 ok"]
    assert "of 1000" in out and "continue from line 8" in out


def test_read_file_caps_and_errors(tools):
    out = tools.ReadFile("x", 1, 100_000)
    assert len(out) <= MAX_OUTPUT_CHARS + 500
    assert "   400\t" in out and "   401\t" not in out
    assert "before startLine" in tools.ReadFile("x", 9, 3)
    assert "only 1000 lines" in tools.ReadFile("x", 5000, 5001)
    assert "must be integers" in tools.call("ReadFile", {"startLine": "a", "endLine": 2})
    assert "     1\t" in tools.call("ReadFile", {})  # defaults to the first 100 lines


def test_read_file_ignores_the_path_asked_for(tools):
    out = tools.ReadFile("/etc/passwd", 1, 1)
    assert "root:" not in out and "     1\tLine 1 ok" in out and "not available" in out


def test_grep_literal_is_case_insensitive(tools):
    out = tools.GrepSearch("error", False, 3)
    assert out.splitlines()[1:] == ["10: Line 10 ERROR", "20: Line 20 ERROR", "30: Line 30 ERROR"]
    assert "more exist" in out
    assert tools.GrepSearch("line 1000", False).splitlines()[1] == "1000: Line 1000 ERROR"
    assert "No lines match" in tools.GrepSearch("zzz", False)
    # a literal query is not a regex
    assert "No lines match" in tools.GrepSearch("Line .* ERROR", False)


def test_grep_regex(tools):
    out = tools.GrepSearch(r"^line 9\d error$", True)
    assert out.splitlines()[1:] == ["90: Line 90 ERROR"]
    assert "invalid regular expression" in tools.GrepSearch("a(", True)
    assert "non-empty" in tools.GrepSearch("", True)
    assert len(tools.GrepSearch("line", False, 10_000).splitlines()) == 201  # capped at 200


def test_catastrophic_regex_is_bounded(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text(("a" * 30_000 + "!\n") * 3)
    tools = TranscriptTools(path, grep_seconds=0.3)
    started = time.monotonic()
    out = tools.GrepSearch("(a+)+$", True)
    assert time.monotonic() - started < 1.5
    # a linear-time engine: no backtracking, so the full answer comes back
    assert out == "No lines match '(a+)+$'."
    assert tools.GrepSearch("(a+)+!$", True).startswith("3 matching lines")


def test_unknown_tool_and_bad_arguments(tools):
    assert "unknown tool" in tools.call("Bash", {"cmd": "ls"})
    assert "not a JSON object" in tools.call("ReadFile", None)


@pytest.mark.slow
def test_large_file_is_streamed_in_bounded_memory(tmp_path):
    path = tmp_path / "big.txt"
    line = "x" * 200 + " filler\n"
    with path.open("w") as handle:
        for _ in range(200):
            handle.write(line * 1000)  # ~40 MB in total
        handle.write("the NEEDLE is here\n")
        handle.write("y" * 3_000_000 + "\n")  # one very long line
    tools = TranscriptTools(path, grep_seconds=60)
    tracemalloc.start()
    out = tools.GrepSearch("needle", False)
    tail = tools.ReadFile("x", 200_001, 200_002)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert "200001: the NEEDLE is here" in out
    assert "line truncated" in tail and "200002\t" not in tail.split("truncated")[1]
    assert peak < 20 * 1024 * 1024
