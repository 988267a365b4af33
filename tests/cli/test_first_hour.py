"""The first hour: `judge` alone prints the help, `judge --version`, `judge init`, the
README's test command in a fresh clone, and the demo's PATH hint."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import jsonschema
import pytest
import yaml

from judge.cli import main
from judge.cli.init import FILES
from judge.config import config_json_schema

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


def test_init_writes_a_config_and_suite_that_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in list(os.environ):
        if name.startswith("JUDGE_MODEL_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    assert main(["init", "proj"]) == 0
    out = capsys.readouterr().out
    assert "judge validate proj/judge.yaml --strict" in out
    assert "judge eval proj/judge-smoke/suite.yaml --out proj/runs/smoke --model fake:heuristic" in out
    config = tmp_path / "proj" / "judge.yaml"
    assert "# judge hook configuration" in config.read_text()  # commented
    jsonschema.validate(yaml.safe_load(config.read_text()), config_json_schema())
    # the next commands it prints work, offline
    assert main(["validate", "proj/judge.yaml", "--strict"]) == 0
    assert capsys.readouterr().err == ""
    suite = "proj/judge-smoke/suite.yaml"
    assert main(["eval", suite, "--out", "proj/runs/smoke", "--model", "fake:heuristic", "--quiet"]) == 0
    report = json.loads((tmp_path / "proj" / "runs" / "smoke" / "report.json").read_text())
    assert report["n"] == 5 and report["errors"] == 0 and report["accuracy"] == 1.0


def test_init_never_overwrites_without_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "judge.yaml").write_text("hooks: {}\n")
    assert main(["init", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err == f"judge init: not overwriting {tmp_path / 'judge.yaml'} (use --force)\n"
    assert (tmp_path / "judge.yaml").read_text() == "hooks: {}\n"
    assert not (tmp_path / "judge-smoke").exists()  # nothing written at all
    assert main(["init", str(tmp_path), "--force"]) == 0
    assert (tmp_path / "judge.yaml").read_text() == FILES["judge.yaml"]


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


def test_demo_ends_by_telling_how_to_get_judge_on_path() -> None:
    script = (REPO / "scripts" / "demo.sh").read_text()
    tail = script[script.index("the judge command on your PATH") :]
    assert 'source "$ROOT/.venv/bin/activate"' in tail
    assert "judge init" in tail
