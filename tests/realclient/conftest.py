"""Fixtures of the real-client tier: the pinned Claude Code CLI (installed once, or the
tests skip with the reason), a fresh :class:`ClaudeSession` per test, and one runtime
folder for the resident judge those sessions start (ended with the test run)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.realclient.claude_cli import find_claude
from tests.realclient.harness import ClaudeSession
from tests.residents import stop_residents


@pytest.fixture(scope="session")
def claude_binary() -> Path:
    binary, why = find_claude()
    if binary is None:
        pytest.skip(why)
    return binary


@pytest.fixture(scope="session")
def resident_runtime() -> Iterator[Path]:
    """A private folder (0700, a short path: the resident's socket lives there) for the
    resident judge of every session; the resident and its workers end with the run."""
    folder = Path(tempfile.mkdtemp(prefix="judge-rt-"))
    yield folder
    stop_residents(folder)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def session(claude_binary: Path, tmp_path: Path, resident_runtime: Path) -> Iterator[ClaudeSession]:
    made = ClaudeSession(claude=claude_binary, root=tmp_path, runtime=resident_runtime)
    yield made
    made.close()
