"""The `judge` command itself: alone it prints the whole help, and `--version` is the
package's version."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from judge.cli import main

REPO = Path(__file__).resolve().parents[2]


def test_judge_alone_prints_the_help_with_usage_status() -> None:
    done = subprocess.run([sys.executable, "-m", "judge"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("usage: judge")
    for command in ("init", "validate", "run", "serve", "claude-code", "eval", "tune"):
        assert command in done.stderr
    assert "An LLM-as-judge quality gate" in done.stderr  # the full help, not only the usage


def test_version_is_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert capsys.readouterr().out == f"judge {version}\n"


def test_every_host_command_reads_its_hook_input_before_parsing() -> None:
    from judge.cli import HOOK_COMMANDS
    from judge.cli.hosts import HOST_TITLES

    assert set(HOOK_COMMANDS) == {"claude-code", *HOST_TITLES}
