"""`judge eval` and `judge run` run the checks of `judge validate` before anything is judged:
a misspelt tier is never sent to a provider as a model name (a lenient gateway would answer
it and the run would score as if nothing were wrong), and a broken template is not judged
case by case into 100 % errors."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from judge.cli import main
from judge.testing import LLMServer, verdict
from tests.evaluation.test_runner import ScriptedJudge, labelled_rows, write_suite

TIER_TYPO: dict[str, Any] = {
    "hooks": {"Stop": [{"model": "ReasoningFats", "prompt": "Is the final answer complete? $ARGUMENTS"}]}
}
BROKEN_TEMPLATE: dict[str, Any] = {
    "hooks": {"Stop": [{"prompt": "Is the final answer {{ final_output } complete? $ARGUMENTS"}]}
}


def test_eval_refuses_a_misspelt_tier_before_a_lenient_gateway_sees_a_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = write_suite(tmp_path / "s", labelled_rows(4), TIER_TYPO)
    with LLMServer(handler=lambda request: verdict(True)) as server:  # answers any model name
        for key, value in server.env("openai").items():
            monkeypatch.setenv(key, value)
        monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
        code = main(["eval", str(suite), "--out", str(tmp_path / "out")])
        assert server.requests == []
    _, err = capsys.readouterr()
    config = (tmp_path / "s" / "agent.yaml").resolve()
    assert code == 2
    assert err.splitlines() == [
        f"judge eval: cannot load suite {suite}:",
        f"  {config}: hooks.Stop[0].model: unknown tier 'ReasoningFats' (did you mean ReasoningFast?)",
        f"  {config}: the configuration cannot run; fix it (judge validate {config})",
    ]
    assert not (tmp_path / "out" / "results.jsonl").exists()


def test_eval_refuses_a_broken_template_before_the_first_case(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from judge.cli import build_parser
    from judge.cli.eval import eval_main

    suite = write_suite(tmp_path / "s", labelled_rows(6), BROKEN_TEMPLATE)
    judge = ScriptedJudge()
    args = build_parser().parse_args(["eval", str(suite), "--out", str(tmp_path / "out")])
    assert eval_main(args, judge=judge) == 2
    assert judge.calls == 0
    err = capsys.readouterr().err
    assert "hooks.Stop[0].prompt: line 1: unexpected '}'" in err


def test_eval_prints_the_warnings_and_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hook = {"prompt": "Check the final answer. $ARGUMENTS", "model": "fake:allow", "maxRejections": 12}
    config = {"hooks": {"Stop": [hook]}}
    suite = write_suite(tmp_path / "s", labelled_rows(2), config)
    assert main(["eval", str(suite), "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert "agent.yaml: warning: hooks.Stop[0].maxRejections: 12 is above Claude Code's cap" in err


@pytest.mark.parametrize("config", [TIER_TYPO, BROKEN_TEMPLATE], ids=["tier typo", "broken template"])
def test_run_refuses_a_configuration_with_errors(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    config: dict[str, Any],
) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", io.StringIO('{"final_output": "done"}'))
    assert main(["run", "--config", str(path), "--event", "Stop"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"{path}: hooks.Stop[0].")
