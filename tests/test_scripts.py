"""`scripts/test.sh`, the README's test command: a fresh clone is set up first, once."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

STUB_PYTHON = """#!/usr/bin/env bash
echo "python $*" >> "$(dirname "$0")/../../calls.log"
"""
STUB_SETUP = """#!/usr/bin/env bash
set -e
cd "$(dirname "$0")/.."
echo setup >> calls.log
mkdir -p .venv/bin
cp stub_python .venv/bin/python
chmod +x .venv/bin/python
"""


def test_test_script_sets_up_a_fresh_clone_first(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "test.sh", tmp_path / "scripts" / "test.sh")
    (tmp_path / "scripts" / "setup.sh").write_text(STUB_SETUP)
    (tmp_path / "stub_python").write_text(STUB_PYTHON)
    env = {k: v for k, v in os.environ.items() if k != "PYTHON"}
    run = [shutil.which("bash") or "bash", str(tmp_path / "scripts" / "test.sh")]
    assert subprocess.run(run, env=env, capture_output=True, text=True, timeout=60).returncode == 0
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert calls[0] == "setup"
    assert any(c.startswith("python -m pytest") for c in calls)
    # set up once: the next run goes straight to the checks
    (tmp_path / "calls.log").unlink()
    assert subprocess.run(run, env=env, capture_output=True, text=True, timeout=60).returncode == 0
    assert "setup" not in (tmp_path / "calls.log").read_text().splitlines()
