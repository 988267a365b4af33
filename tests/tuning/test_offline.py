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


# ---------------------------------------------------------------------------
# What rationales, demos and the objectives change, offline

PHRASES = {0: ("pending", "block"), 1: ("escalated", "block"), 2: ("next step for you", "allow")}


def write_phrase_suite(tmp_path: Path, rationales: bool, paired: bool = False) -> Path:
    """Answers whose label hangs on a phrase the heuristic judge does not know: "pending" and
    "escalated" are unfinished (block), "next step for you" is advice (allow). Rationales,
    when given, quote the phrase."""
    cases = []
    for i in range(48):
        phrase, label = PHRASES.get(i % 4, ("", "allow"))
        answer = f"Refund {i}: {phrase}." if phrase else f"Refund {i} was paid."
        case = {"id": f"c{i:02d}", "group": f"g{i // 2 if paired else i}", "label": label}
        case["context"] = {"hook_event_name": "Stop", "final_output": answer}
        if rationales and phrase:
            case["rationale"] = f'{label}: it says "{phrase}"'
        cases.append(case)
    if paired:  # one allow and one block per group: an answer that is paid next to a pending one
        for n, case in enumerate(cases):
            case["label"] = "allow" if n % 2 else "block"
            case["context"]["final_output"] = f"Refund {n} was paid." if n % 2 else f"Refund {n}: pending."
            if rationales:
                case["rationale"] = 'block: it says "pending"' if n % 2 == 0 else "allow: it was paid"
    (tmp_path / "cases.jsonl").write_text("\n".join(json.dumps(c) for c in cases) + "\n")
    (tmp_path / "judge.yaml").write_text(CONFIG)
    suite = tmp_path / "suite.yaml"
    suite.write_text("name: phrases\nconfig: judge.yaml\nevent: Stop\ncases: cases.jsonl\n")
    return suite


def offline_tune(tmp_path: Path, suite: Path, *extra: str) -> dict[str, object]:
    out = tmp_path / "tune"
    argv = ["tune", str(suite), "--out", str(out), "--optimizer-model", "fake:optimizer", "--quiet"]
    assert main([*argv, "--no-cache", *extra]) == 0
    summary: dict[str, object] = json.loads((out / "summary.json").read_text())
    return summary


def test_rationales_give_the_offline_optimizer_its_rules(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = offline_tune(
        tmp_path / "a", write_phrase_suite(_mk(tmp_path / "a"), rationales=False), "--demos", "0"
    )
    why = offline_tune(
        tmp_path / "b", write_phrase_suite(_mk(tmp_path / "b"), rationales=True), "--demos", "0"
    )
    capsys.readouterr()
    assert plain["winner"] == plain["baseline"]  # without reasons nothing it tries helps
    test = why["test"]
    assert isinstance(test, dict) and test["accuracyWinner"] > test["accuracyBaseline"]
    report = (tmp_path / "b" / "tune" / "report.html").read_text()
    assert "The Pareto frontier of dev" in report and "people&#x27;s rationale" in report
    assert "it says &quot;pending&quot;" in report
    lines = [json.loads(x) for x in (tmp_path / "b" / "tune" / "candidates.jsonl").read_text().splitlines()]
    assert any('Block an answer that says "pending".' in c["prompt"] for c in lines)
    assert all(
        set(c["shown"]) <= set(json.loads((tmp_path / "b" / "tune" / "splits.json").read_text())["train"])
        for c in lines
    )


def test_demos_alone_carry_the_rationales_to_the_judge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = offline_tune(
        tmp_path, write_phrase_suite(tmp_path, rationales=True), "--rounds", "1", "--edits", "1"
    )
    capsys.readouterr()
    lines = [json.loads(x) for x in (tmp_path / "tune" / "candidates.jsonl").read_text().splitlines()]
    winner = next(c for c in lines if c["winner"])
    assert winner["kind"] == "demos" and len(winner["demos"]) == 4 and winner["frontier"]
    assert summary["winner"] == winner["id"] and winner["id"] in summary["frontier"]  # type: ignore[operator]


def test_the_pairwise_objective_scores_pairs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    summary = offline_tune(
        tmp_path, write_phrase_suite(tmp_path, rationales=True, paired=True), "--objective", "pairwise"
    )
    capsys.readouterr()
    assert str(summary["objective"]).startswith("pair accuracy")
    test = summary["test"]
    assert isinstance(test, dict) and test["unit"] == "pair" and test["accuracyWinner"] == 1.0
    assert "pairs" in str(summary["headline"])
    # a suite without pairs cannot be tuned for them
    unpaired = write_phrase_suite(_mk(tmp_path / "u"), rationales=True)
    argv = ["tune", str(unpaired), "--out", str(tmp_path / "u" / "o"), "--objective", "pairwise", "--quiet"]
    assert main([*argv, "--optimizer-model", "fake:optimizer"]) == 2
    assert "needs paired cases" in capsys.readouterr().err


def test_a_precision_floor_shows_in_the_summary_and_the_metrics(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = offline_tune(
        tmp_path,
        write_phrase_suite(tmp_path, rationales=True),
        "--objective",
        "precision",
        "--min-block-precision",
        "0.9",
    )
    capsys.readouterr()
    assert summary["objective"] == "block recall subject to block precision >= 0.9"
    lines = [json.loads(x) for x in (tmp_path / "tune" / "candidates.jsonl").read_text().splitlines()]
    winner = next(c for c in lines if c["winner"])
    assert winner["feasible"]["dev"] is True and winner["metrics"]["dev"]["blockPrecision"] >= 0.9


def _mk(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path
