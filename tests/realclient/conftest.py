"""Fixtures of the real-client tier: the pinned Claude Code CLI (installed once, or the
tests skip with the reason) and a fresh :class:`ClaudeSession` per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.realclient.claude_cli import find_claude
from tests.realclient.harness import ClaudeSession


@pytest.fixture(scope="session")
def claude_binary() -> Path:
    binary, why = find_claude()
    if binary is None:
        pytest.skip(why)
    return binary


@pytest.fixture
def session(claude_binary: Path, tmp_path: Path) -> Iterator[ClaudeSession]:
    made = ClaudeSession(claude=claude_binary, root=tmp_path)
    yield made
    made.close()
