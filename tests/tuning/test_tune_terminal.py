"""What `judge tune` says in the terminal, not only in report.html: a test split too small to
trust, and a test split that was not scored, with why and what would fix it."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge.cli import main
from judge.tuning.optimizer import Candidate, SplitEval
from judge.tuning.report import unscored_test_reason
from judge.tuning.splits import Split
from judge.tuning.tuner import TuneOutcome
from tests.tuning.test_tune_cli import tune_args, write


def test_a_tiny_test_split_is_warned_about_in_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, n=12)
    assert main(tune_args(tmp_path, "--rounds", "1", "--split", "40/40/20")) == 0
    err = capsys.readouterr().err
    assert "warning: The test split has only 3 items: the intervals are wide" in err


def test_the_split_warning_comes_first_when_not_quiet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, n=12)
    args = [a for a in tune_args(tmp_path, "--rounds", "1", "--split", "40/40/20") if a != "--quiet"]
    assert main(args) == 0
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("split (seed 0): train ")
    assert lines[1].startswith("warning: the test split has 3 item(s): its intervals will be wide")


def test_an_empty_test_split_is_named_as_the_reason_there_is_no_test_score(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, n=12)
    assert main(tune_args(tmp_path, "--rounds", "1", "--split", "50/50/0")) == 0
    captured = capsys.readouterr()
    assert "test None" in captured.out
    assert "judge tune: the test split was not scored: the test split is empty" in captured.err


def _outcome(calls: int, rate: float) -> TuneOutcome:
    base = Candidate(id="c0", round=0, parent=None, prompt="p", status="baseline")
    winner = Candidate(id="c3", round=1, parent="c0", prompt="q", status="kept")
    split = Split(train=["a"], dev=["b"], test=[f"t{i}" for i in range(80)], seed=0, ratios=(0.2, 0.4, 0.4))
    cut = SplitEval(split="test", items=[], score=None, complete=False)
    return TuneOutcome(
        suite="s",
        event="Stop",
        index=0,
        split=split,
        candidates=[base, winner],
        baseline=base,
        winner=winner,
        stopped="budget",
        calls=calls,
        max_calls=2000,
        test={"c0": cut, "c3": cut},
        calls_per_judgement=rate,
    )


def test_a_test_split_the_budget_could_not_score_says_what_a_judgement_cost() -> None:
    assert unscored_test_reason(_outcome(2000, 3.5)) == (
        "the call budget ran out during the test evaluation (2000 calls used of --max-calls 2000); a "
        "judgement took 3.5 calls, so scoring the test split takes about 560: raise --max-calls"
    )
