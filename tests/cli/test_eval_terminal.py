"""What `judge eval` shows in the terminal, as users of promptfoo and Inspect expect: the
first cases the judge and the labels disagree on, the run as JSON (`--json`), `--help`
with defaults and exit codes, and the report opened in a browser (`--open`)."""

from __future__ import annotations

import json
import webbrowser
from pathlib import Path
from typing import Any

import pytest

from judge.cli import build_parser, main
from judge.cli.eval import eval_main
from tests.evaluation.test_runner import ScriptedJudge, labelled_rows, write_suite


def run_eval(argv: list[str]) -> int:
    args = build_parser().parse_args(["eval", *argv])
    return eval_main(args, judge=ScriptedJudge())


def test_the_summary_lists_the_first_disagreements_with_their_reasons(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # labelled_rows(10): the labels of c004 and c009 are wrong, so the judge disagrees there
    suite = write_suite(tmp_path / "s", labelled_rows(10))
    out = tmp_path / "out"
    assert run_eval([str(suite), "--out", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = lines.index("  2 disagreement(s) with the labels:")
    assert lines[at + 1 : at + 3] == [
        "    c004: label block, judged allow",
        "    c009: label allow, judged block: incomplete: answer 9 BAD",
    ]
    assert run_eval([str(suite), "--out", str(out), "--disagreements", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = lines.index("  2 disagreement(s) with the labels:")
    assert lines[at + 1 : at + 3] == [
        "    c004: label block, judged allow",
        f"    ... and 1 more in {out / 'report.html'}",
    ]
    assert run_eval([str(suite), "--out", str(out), "--disagreements", "0"]) == 0
    assert "disagreement" not in capsys.readouterr().out


def test_json_prints_the_run_as_one_object_and_keeps_the_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = write_suite(tmp_path / "s", labelled_rows(10))
    out = tmp_path / "out"
    assert run_eval([str(suite), "--out", str(out), "--json", "--fail-under", "accuracy=0.9"]) == 1
    captured = capsys.readouterr()
    document: dict[str, Any] = json.loads(captured.out)  # stdout is the JSON alone: no progress
    assert document["exitCode"] == 1
    assert document["report"] == json.loads((out / "report.json").read_text())
    assert [d["id"] for d in document["report"]["disagreements"]] == ["c004", "c009"]
    assert document["failed"] == ["--fail-under: accuracy 0.8 < 0.9"]
    assert document["files"]["report.html"] == str(out / "report.html")
    assert "FAIL --fail-under: accuracy 0.8 < 0.9" in captured.err
    assert run_eval([str(tmp_path / "missing.yaml"), "--out", str(out), "--json"]) == 2
    broken = json.loads(capsys.readouterr().out)
    assert broken["exitCode"] == 2 and "report" not in broken
    assert broken["problems"][0].startswith("judge eval: cannot load suite")


def test_json_of_a_comparison_holds_the_comparison(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = write_suite(
        tmp_path / "s",
        labelled_rows(4),
        {"hooks": {"Stop": [{"prompt": "Check the final answer. $ARGUMENTS"}]}},
    )
    argv = ["eval", str(suite), "--out", str(tmp_path / "o"), "--json"]
    assert main([*argv, "--model", "fake:allow", "--model", "fake:heuristic"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["exitCode"] == 0
    assert [v["name"] for v in document["comparison"]["variants"]] == ["fake:allow", "fake:heuristic"]


def test_open_shows_the_report_in_a_browser_or_says_there_is_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[str] = []
    monkeypatch.setattr(webbrowser, "open", lambda url: opened.append(url) or True)
    suite = write_suite(tmp_path / "s", labelled_rows(4))
    out = tmp_path / "out"
    assert run_eval([str(suite), "--out", str(out), "--open", "--quiet"]) == 0
    assert opened == [(out / "report.html").resolve().as_uri()]
    monkeypatch.setattr(webbrowser, "open", lambda url: False)
    assert run_eval([str(suite), "--out", str(out), "--open", "--quiet"]) == 0
    assert f"judge eval: no browser to open {out / 'report.html'} with" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        (["eval"], ["(default: 16)", "exit codes: 0 the run completed", "--disagreements N"]),
        (["tune"], ["optimizer rounds (default 3)", "exit codes: 0 the run completed"]),
        (["serve"], ["(default: 127.0.0.1)", "(default: 8080)", "exit codes: 0 after a graceful stop"]),
        (["run"], ["exit codes: 0 a decision was reached"]),
        (["validate"], ["--json", "exit codes: 0 valid"]),
        (["claude-code", "install"], ["(default: project)"]),
    ],
)
def test_help_shows_defaults_and_exit_codes(
    command: list[str], shown: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*command, "--help"])
    assert exited.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for fragment in shown:
        assert " ".join(fragment.split()) in text
