"""`judge tune` can be tried offline: a `fake:optimizer` proposes edits, a `fake:heuristic`
judge scores them, and the usual outputs are written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judge.cli import main
from judge.llm.providers.fake_optimizer import CRITIQUE, RULES

CONFIG = """\
hooks:
  Stop:
    - prompt: |
        Check that the agent's final answer is complete.
        $ARGUMENTS
      model: fake:heuristic
"""


def write_suite(tmp_path: Path) -> Path:
    cases = []
    for i in range(16):
        unfinished = i % 4 == 0
        wrong_but_finished = i % 4 == 1  # the heuristic judge allows these: train mistakes
        answer = "I will fix it next." if unfinished else f"The result is {i}."
        label = "block" if unfinished or wrong_but_finished else "allow"
        cases.append({"id": f"c{i}", "group": f"g{i}", "context": {"final_output": answer}, "label": label})
    (tmp_path / "cases.jsonl").write_text("\n".join(json.dumps(c) for c in cases) + "\n")
    (tmp_path / "judge.yaml").write_text(CONFIG)
    suite = tmp_path / "suite.yaml"
    suite.write_text("name: offline\nconfig: judge.yaml\nevent: Stop\ncases: cases.jsonl\n")
    return suite


def test_tune_runs_offline_with_the_fake_optimizer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = write_suite(tmp_path)
    out = tmp_path / "tune"
    argv = ["tune", str(suite), "--hook", "Stop:0", "--out", str(out), "--rounds", "1"]
    code = main([*argv, "--optimizer-model", "fake:optimizer", "--quiet", "--edits", "2"])
    capsys.readouterr()
    assert code == 0
    candidates = [json.loads(line) for line in (out / "candidates.jsonl").read_text().splitlines()]
    edits = [c for c in candidates if c["status"] != "baseline"]
    assert edits, "the fake optimizer proposed no edits"
    assert any(RULES[0] in c["prompt"] for c in edits)
    assert all("$ARGUMENTS" in c["prompt"] for c in edits)
    assert any(c.get("critique") == CRITIQUE for c in edits)
    assert (out / "best.yaml").is_file() and (out / "report.html").is_file()
