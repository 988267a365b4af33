"""`--fail-under` and `--fail-over` on an eval run's metrics: upper bounds on rates, each
flag only for its direction, exact comparisons (not the rounded report.json values),
abstentions, and a bound whose metric is undefined because every labelled case errored."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge.evaluation.bounds import check_bounds, parse_bounds
from judge.evaluation.metrics import compute_metrics
from judge.evaluation.runner import CaseResult
from tests.cli.test_eval import eval_with, rows


@pytest.mark.parametrize(
    ("flags", "code", "message"),
    [
        (["--fail-over", "errorRate=0.05"], 1, "FAIL --fail-over: errorRate 0.25 > 0.05"),
        (["--fail-over", "errorRate=0.25"], 0, None),
        (["--fail-over", "error_rate=0.3", "--fail-under", "accuracy=0.5"], 0, None),
        (["--fail-over", "abstentionRate=0"], 0, None),  # errors decided by failMode: no abstention
        (["--fail-over", "falsePassRate=0.4"], 1, "FAIL --fail-over: falsePassRate 0.5 > 0.4"),
        (
            ["--fail-under", "errorRate=0.05"],
            2,
            "errorRate is better lower; bound it with --fail-over errorRate=0.05",
        ),
        (["--fail-over", "recall=0.9"], 2, "recall is better higher; bound it with --fail-under recall=0.9"),
        (["--fail-over", "bogus=1"], 2, "--fail-over: unknown metric 'bogus'; valid metrics: abstentionRate"),
        (["--fail-over", "errorRate"], 2, "expected METRIC=VALUE, e.g. errorRate=0.05"),
    ],
)
def test_fail_over_bounds_rates_from_above(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], code: int, message: str | None
) -> None:
    cases = rows(("bad", "block"), ("ok", "block"), ("ok", "allow"), ("fail: timeout", "allow"))
    got, _, err, _ = eval_with(tmp_path, cases, "--quiet", *flags, capsys=capsys)
    assert got == code, err
    if message is not None:
        assert message in err


def test_abstentions_are_judgements_without_any_decision() -> None:
    results = [
        CaseResult(id="a", decision=None, error="ContextError: the case could not be evaluated"),
        CaseResult(id="b", decision="allow", error="agent[0] (prompt): timeout"),  # failMode decided
        CaseResult(id="c", decision="block"),
    ]
    metrics = compute_metrics(results)
    assert (metrics["abstentions"], metrics["errors"]) == (1, 2)
    assert metrics["abstentionRate"] == 1 / 3 and metrics["errorRate"] == 2 / 3
    bounds = parse_bounds(["abstentionRate=0.1"], "over")
    assert check_bounds(metrics, bounds) == ["--fail-over: abstentionRate 0.3333333333 > 0.1"]
    assert check_bounds(metrics, parse_bounds(["abstentionRate=0.34"], "over")) == []


def test_bounds_compare_the_exact_value_not_the_rounded_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # accuracy 2/3 = 0.666666...; report.json rounds it to 0.666667, above the bound
    cases = rows(("ok", "allow"), ("bad", "block"), ("ok", "block"))
    code, _, err, report = eval_with(
        tmp_path, cases, "--quiet", "--fail-under", "accuracy=0.6666667", capsys=capsys
    )
    assert report["accuracy"] == 0.666667
    assert code == 1
    assert "FAIL --fail-under: accuracy 0.6666666667 < 0.6666667" in err


def test_undefined_metric_says_that_every_labelled_case_errored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = rows(("fail: no key", "allow"), ("fail: no key", "block"), ("ok", None))
    code, _, err, _ = eval_with(tmp_path, cases, "--quiet", "--fail-under", "accuracy=0.5", capsys=capsys)
    assert code == 1
    assert (
        "FAIL --fail-under: accuracy is undefined: no labelled case could be scored: "
        "all 2 labelled judgements errored; bound 0.5"
    ) in err
    assert "not enough labelled cases" not in err


def test_undefined_metric_without_labels_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err, _ = eval_with(
        tmp_path, rows(("ok", None)), "--quiet", "--fail-under", "recall=0.5", capsys=capsys
    )
    assert code == 1 and "recall is undefined: the suite has no labelled cases" in err
