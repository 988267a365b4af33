"""Hostile inputs against the security promises (README "Security model", SPEC §5-6)."""

from __future__ import annotations

import time

import pytest

from judge.llm import tools as tools_module
from judge.llm.tools import MAX_QUERY_CHARS, TranscriptTools


@pytest.fixture
def tools(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("".join(f"line {i} {'a' * 50}\n" for i in range(200)))
    return TranscriptTools(path, grep_seconds=1.0)


@pytest.mark.timeout(20)
@pytest.mark.parametrize("is_regexp", [False, True])
def test_grep_refuses_a_huge_query_promptly(tools, is_regexp):
    # The regex engine's set-up for a long case-insensitive literal is cubic and ignores
    # its time limit: a 4,000-character query used to take minutes per search.
    began = time.monotonic()
    out = tools.call("GrepSearch", {"query": "x" * 4000, "isRegexp": is_regexp})
    assert time.monotonic() - began < 3
    assert out.startswith("Error:") and str(MAX_QUERY_CHARS) in out


def test_grep_query_at_the_limit_still_works(tools):
    out = tools.call("GrepSearch", {"query": "line 1" + " " * (MAX_QUERY_CHARS - 6), "isRegexp": False})
    assert out.startswith("No lines match")
    assert tools.call("GrepSearch", {"query": "line 19 ", "isRegexp": False}).startswith("1 matching")


def test_grep_deeply_nested_regex_is_an_error_text(tools, monkeypatch):
    # Within the length cap nesting stays shallow; past it the compiler recursed out of
    # the tool call (an exception the judge loop turned into a failed, fail-open hook).
    monkeypatch.setattr(tools_module, "MAX_QUERY_CHARS", 10_000)
    out = tools.call("GrepSearch", {"query": "(?:" * 400 + "a" + ")" * 400, "isRegexp": True})
    assert out.startswith("Error: invalid regular expression") and "nested too deeply" in out
