"""`judge init`: a commented config and a smoke suite that validate and run offline, as the
printed next commands say; existing files are never overwritten without `--force`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest
import yaml

from judge.cli import main
from judge.cli.init import FILES
from judge.config import config_json_schema


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


def test_the_next_steps_cover_claude_code_and_the_printed_command_works(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert main(["init", "my-agent"]) == 0
    out = capsys.readouterr().out
    assert "  judge claude-code install --config my-agent/judge.yaml --dry-run\n" in out
    assert "Without --config it reads\n      .claude/judge.yaml" in out  # where install looks otherwise
    assert main(["claude-code", "install", "--config", "my-agent/judge.yaml", "--dry-run"]) == 0
    diff = capsys.readouterr().out
    assert diff.startswith(f"--- {tmp_path / '.claude' / 'settings.json'}")
    assert '"PreToolUse"' in diff and '"Stop"' in diff
    assert not (tmp_path / ".claude" / "settings.json").exists()  # a dry run writes nothing
