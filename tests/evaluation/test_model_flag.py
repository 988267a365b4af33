"""`judge eval --model M` judges every prompt hook with M for one run, without editing the suite."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from judge.cli import main
from judge.config import config_from_data
from judge.evaluation.variants import with_model

REPO = Path(__file__).resolve().parents[2]


def run_eval(tmp_path: Path, *flags: str) -> tuple[int, dict[str, object] | None]:
    suite = tmp_path / "smoke"
    if not suite.exists():
        shutil.copytree(REPO / "evals" / "smoke", suite)
    out = tmp_path / f"out{len(list(tmp_path.iterdir()))}"
    code = main(["eval", str(suite / "suite.yaml"), "--out", str(out), "--no-cache", "--quiet", *flags])
    report = out / "report.json"
    return code, json.loads(report.read_text()) if report.exists() else None


def test_model_replaces_every_prompt_hooks_model_for_one_run(tmp_path: Path) -> None:
    code, report = run_eval(tmp_path)
    assert code == 0 and report is not None and report["allowRate"] > 0
    code, report = run_eval(tmp_path, "--model", "fake:block:overridden")
    assert code == 0 and report is not None and report["allowRate"] == 0
    results = (tmp_path / "out2" / "results.jsonl").read_text()
    assert "overridden" in results
    # the suite's files are unchanged
    assert "fake:heuristic" in (tmp_path / "smoke" / "agent.yaml").read_text()


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        ("fake:allow", "fake:allow", ""),
        ("Fast", "fast", " (as 'Fast')"),
        ("openai:x", "OpenAI:x", " (as 'openai:x')"),
    ],
)
def test_the_same_model_twice_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], first: str, second: str, same: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        run_eval(tmp_path, "--model", first, "--model", second)
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"judge eval: error: --model {second} given twice{same}: each compared model must differ"
    )
    assert not (tmp_path / "out1").exists()  # nothing was judged


def test_model_is_checked_like_a_hooks_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        run_eval(tmp_path, "--model", "ReasoningFats")
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--model ReasoningFats: unknown tier 'ReasoningFats' (did you mean ReasoningFast?)" in err


def test_with_model_covers_custom_agents_and_leaves_command_hooks() -> None:
    config = config_from_data(
        {
            "hooks": {
                "Stop": [{"prompt": "a"}, {"type": "command", "command": "exit 0"}],
                "PreToolUse": [{"matcher": "*", "prompt": "b", "model": "Fast"}],
            },
            "customAgents": {"r": {"instructions": "x", "hooks": {"Stop": [{"prompt": "c"}]}}},
        }
    )
    changed = with_model(config, "openai:gpt-4o")
    assert [h.model for h in changed.hooks.Stop if h.type == "prompt"] == ["openai:gpt-4o"]
    assert changed.hooks.Stop[1].command == "exit 0"
    assert changed.hooks.PreToolUse[0].model == "openai:gpt-4o"
    assert changed.custom_agents["r"].hooks.Stop[0].model == "openai:gpt-4o"
    assert changed.custom_agents["r"].instructions == "x"
    assert config.hooks.PreToolUse[0].model == "Fast"
