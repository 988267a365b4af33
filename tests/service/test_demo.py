"""The README demo (`scripts/demo.sh`): its service config and client, run against a real
`judge serve`, and the hint it ends with for getting `judge` on PATH."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from judge.config import load_config
from tests.service.test_service import REPO, Service

DEMO = REPO / "examples" / "demo"


def test_demo_configs_are_valid() -> None:
    config = load_config(DEMO / "agent.yaml")
    assert [h.type for h in config.hooks.Stop] == ["prompt", "command"]
    assert subprocess.run(["bash", "-n", str(REPO / "scripts" / "demo.sh")], check=False).returncode == 0


@pytest.mark.slow
def test_demo_client_against_the_service(tmp_path: Path) -> None:
    args = [
        "--config",
        str(DEMO / "agent.yaml"),
        "--data-dir",
        str(tmp_path / "data"),
        "--transcripts-dir",
        str(DEMO / "transcripts"),
    ]
    service = Service(tmp_path, args, env={"JUDGE_MODEL_REASONINGFAST": "fake:heuristic"}).start()
    try:
        done = subprocess.run(
            [sys.executable, str(DEMO / "client.py"), f"http://127.0.0.1:{service.port}"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        assert service.stop() == 0
    assert done.returncode == 0, done.stdout + done.stderr
    assert "All decisions as expected." in done.stdout
    assert "FAKE provider" in done.stdout and "fake:heuristic" in done.stdout
    assert (tmp_path / "data" / "session_summaries.jsonl").is_file()


def test_demo_ends_by_telling_how_to_get_judge_on_path() -> None:
    script = (REPO / "scripts" / "demo.sh").read_text()
    tail = script[script.index("the judge command on your PATH") :]
    assert 'source "$ROOT/.venv/bin/activate"' in tail
    assert "judge init" in tail
