"""Errors are visible where people look: `judge run`'s stderr, `judge eval`'s summary,
report.json and report.html (grouped by message with counts), a run where everything
errored (exit 2), upper bounds (`--fail-over`), exact bound comparisons, and a bound
whose metric is undefined because every labelled case errored."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from judge.errors import HookError
from judge.evaluation.bounds import check_bounds, parse_bounds
from judge.evaluation.metrics import compute_metrics
from judge.evaluation.runner import CaseResult
from judge.hooks.judging import PromptRequest, PromptVerdict
from tests.cli.test_eval import run_eval
from tests.cli.test_run import STOP, run, write_config
from tests.evaluation.test_runner import write_suite


class KindsJudge:
    """Allows ``ok`` answers, blocks ``bad`` ones, raises the text after ``fail:``."""

    async def evaluate(self, request: PromptRequest) -> PromptVerdict:
        text = str(request.context.get("final_output", ""))
        if text.startswith("fail:"):
            raise HookError(text.removeprefix("fail:").strip())
        return PromptVerdict(ok="bad" not in text, reason="it is bad" if "bad" in text else None)


def rows(*outputs: tuple[str, str | None]) -> list[dict[str, Any]]:
    return [
        {"id": f"c{i}", "context": {"final_output": out}, "label": label}
        for i, (out, label) in enumerate(outputs)
    ]


def eval_with(
    tmp_path: Path, cases: list[dict[str, Any]], *flags: str, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str, dict[str, Any]]:
    suite = write_suite(tmp_path / "s", cases)
    out = tmp_path / "out"
    code = run_eval([str(suite), "--out", str(out), *flags], judge=KindsJudge())
    captured = capsys.readouterr()
    report = json.loads((out / "report.json").read_text()) if (out / "report.json").exists() else {}
    return code, captured.out, captured.err, report


# --------------------------------------------------------------------------- judge run


def test_judge_run_prints_each_hook_error_on_stderr_and_keeps_stdout_json(tmp_path: Path) -> None:
    port = socket.socket()
    port.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{port.getsockname()[1]}/v1"
    port.close()
    config = write_config(
        tmp_path,
        {
            "Stop": [
                {"type": "prompt", "prompt": "Done? $ARGUMENTS", "model": "openai:gpt-x"},
                {"type": "prompt", "prompt": "Done? $ARGUMENTS", "model": "anthropic:claude-x"},
                {"type": "command", "command": "true"},
            ]
        },
    )
    env = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": url, "ANTHROPIC_API_KEY": ""}
    proc = run("--config", config, "--event", "Stop", stdin=STOP, env=env)
    assert proc.returncode == 0
    decision = json.loads(proc.stdout)  # stdout is still only the JSON
    assert decision["decision"] == "allow"
    lines = proc.stderr.splitlines()
    assert lines == [
        "judge run: Stop hook agent[0] (prompt, openai:gpt-x) failed: provider failed after 3 attempts: "
        f"openai:gpt-x: connection refused by {url} -> allow (its failMode)",
        "judge run: Stop hook agent[1] (prompt, anthropic:claude-x) failed: ANTHROPIC_API_KEY is not set "
        "(needed for anthropic:claude-x) -> allow (its failMode)",
    ]


def test_judge_run_is_silent_on_stderr_without_errors(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"Stop": [{"type": "command", "command": "true"}]})
    proc = run("--config", config, "--event", "Stop", stdin=STOP)
    assert (proc.returncode, proc.stderr) == (0, "")


# --------------------------------------------------------------------------- eval summary


def test_eval_summary_report_json_and_html_group_errors_by_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = rows(
        ("fail: OPENAI_API_KEY is not set", "allow"),
        ("ok", "allow"),
        ("fail: OPENAI_API_KEY is not set", "block"),
        ("fail: rate limited", None),
        ("fail: OPENAI_API_KEY is not set", None),
    )
    code, out, _, report = eval_with(tmp_path, cases, capsys=capsys)
    assert code == 0
    key = "agent[0] (prompt): OPENAI_API_KEY is not set"
    assert "  3 x " + key in out.splitlines()
    assert "  1 x agent[0] (prompt): rate limited" in out.splitlines()
    assert out.index(key) < out.index("rate limited")  # most frequent first
    assert report["errorGroups"] == [
        {"message": key, "count": 3, "examples": ["c0#0", "c2#0", "c4#0"]},
        {"message": "agent[0] (prompt): rate limited", "count": 1, "examples": ["c3#0"]},
    ]
    page = (tmp_path / "out" / "report.html").read_text()
    assert "Errors by message" in page
    assert "<td class=num>3</td><td>agent[0] (prompt): OPENAI_API_KEY is not set</td>" in page


def test_summary_lists_the_most_frequent_kinds_and_counts_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = rows(("ok", None), *[(f"fail: kind {i}", None) for i in range(7)])
    code, out, _, report = eval_with(tmp_path, cases, capsys=capsys)
    assert code == 0 and len(report["errorGroups"]) == 7
    assert "  ... and 2 more in 2 other kind(s) (see report.html)" in out.splitlines()


@pytest.mark.parametrize("quiet", [False, True])
def test_a_run_where_every_judgement_errored_says_so_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], quiet: bool
) -> None:
    cases = rows(("fail: OPENAI_API_KEY is not set", "allow"), ("fail: OPENAI_API_KEY is not set", "block"))
    flags = ["--fail-under", "accuracy=0.5"] + (["--quiet"] if quiet else [])
    code, _, err, report = eval_with(tmp_path, cases, *flags, capsys=capsys)
    assert code == 2
    assert (
        "judge eval: every judgement errored (2 of 2): the run measured nothing; "
        "most common: agent[0] (prompt): OPENAI_API_KEY is not set"
    ) in err
    assert report["errors"] == 2  # the reports are still written, for a look at why
    if quiet:
        assert "  2 x agent[0] (prompt): OPENAI_API_KEY is not set" in err.splitlines()


# --------------------------------------------------------------------------- bounds


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
