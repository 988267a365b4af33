"""`judge eval` end to end: reports, junit shape, --fail-under exit codes, cache (and where it
lives), kill + resume, and errors: grouped by message in the summary and the reports, and a
run where every judgement errored."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from judge.cli import build_parser, main
from judge.cli.eval import eval_main
from judge.errors import HookError
from judge.evaluation.cache import CACHE_NAME
from judge.evaluation.metrics import stable_view
from judge.evaluation.runner import read_results
from judge.hooks.judging import PromptRequest, PromptVerdict
from judge.testing import LLMRequest, LLMServer, Reply, verdict
from tests.evaluation.test_runner import ScriptedJudge, labelled_rows, write_suite

REPO = Path(__file__).resolve().parents[2]
LLM_CONFIG: dict[str, Any] = {"hooks": {"Stop": [{"type": "prompt", "prompt": "Is it complete? $ARGUMENTS"}]}}
BAD = re.compile(r"answer \d+ BAD")


def run_eval(argv: list[str], judge: Any = None) -> int:
    args = build_parser().parse_args(["eval", *argv])
    return eval_main(args, judge=judge if judge is not None else ScriptedJudge())


def judge_by_marker(request: LLMRequest) -> Reply:
    if BAD.search(request.text):
        return verdict(False, "the answer is marked BAD")
    return verdict(True)


def test_reports_and_junit_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = labelled_rows(10)
    rows.append({"id": "free-ok", "context": {"final_output": "fine"}})
    rows.append({"id": "free-bad", "context": {"final_output": "answer 99 BAD <script>x</script>"}})
    rows.append({"id": "broken", "context": {"final_output": "ERR"}, "label": "allow"})
    suite = write_suite(tmp_path / "s", rows)
    out = tmp_path / "out"
    assert run_eval([str(suite), "--out", str(out), "--quiet"]) == 0
    assert capsys.readouterr().out == ""  # --quiet prints nothing
    report = json.loads((out / "report.json").read_text())
    assert report["n"] == 13 and report["errors"] == 1
    # labelled_rows(10): BAD at 0,3,6,9; labels flipped at 4 and 9
    assert report["confusion"] == {"tp": 3, "fp": 1, "tn": 5, "fn": 1}
    lines = (out / "results.jsonl").read_text().splitlines()
    assert len(lines) == 13 and {json.loads(line)["id"] for line in lines} >= {"free-ok", "broken"}

    root = ET.parse(out / "junit.xml").getroot()
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert len(suites) == 1
    ts = suites[0]
    for element in (root, ts):
        for attr in ("tests", "failures", "errors", "skipped", "time"):
            assert attr in element.attrib, attr
        float(element.attrib["time"])
    cases = {tc.attrib["name"]: tc for tc in ts.findall("testcase")}
    assert len(cases) == 13 and ts.attrib["tests"] == "13"
    assert cases["c004"].find("failure") is not None  # labelled block, judge allowed
    assert cases["c009"].find("failure") is not None  # labelled allow, judge blocked
    assert cases["free-bad"].find("failure") is not None  # unlabelled and blocked
    assert cases["free-ok"].find("failure") is None and cases["free-ok"].find("error") is None
    assert cases["broken"].find("error") is not None
    assert ts.attrib["failures"] == "3" and ts.attrib["errors"] == "1"
    for tc in cases.values():
        assert {"classname", "name", "time"} <= set(tc.attrib)

    page = (out / "report.html").read_text()
    assert "<script>x</script>" not in page and "&lt;script&gt;x&lt;/script&gt;" in page
    assert not re.search(r"""(src|href)=["']https?:""", page)  # self-contained
    assert "<svg" in page and "Disagreements (2)" in page and "Errors (1)" in page


def test_html_lists_disagreements_with_reasons_and_transcripts(tmp_path: Path) -> None:
    rows = [
        {
            "id": "miss",
            "context": {"final_output": "answer 1 BAD"},
            "label": "allow",
            "transcript": "USER: <b>hi</b>",
        },
        {"id": "hit", "context": {"final_output": "fine"}, "label": "allow"},
    ]
    suite = write_suite(tmp_path / "s", rows)
    assert run_eval([str(suite), "--out", str(tmp_path / "o"), "--quiet"]) == 0
    page = (tmp_path / "o" / "report.html").read_text()
    assert "incomplete: answer 1 BAD" in page  # the judge's reason
    assert "USER: &lt;b&gt;hi&lt;/b&gt;" in page  # the transcript, escaped, inside <details>
    assert "<details>" in page
    assert "Disagreements (1)" in page


@pytest.mark.parametrize(
    ("bounds", "code"),
    [
        (["accuracy=0.7"], 0),  # 8/10
        (["accuracy=0.9"], 1),
        (["recall=0.5", "precision=0.5"], 0),
        (["recall=0.5", "f1=0.99"], 1),
        (["balanced_accuracy=0.1"], 0),
        (["bogus=0.5"], 2),
        (["recall"], 2),
        (["recall=high"], 2),
        (["recall=nan"], 2),
        (["accuracy=inf"], 2),
    ],
)
def test_fail_under_exit_codes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bounds: list[str], code: int
) -> None:
    suite = write_suite(tmp_path / "s", labelled_rows(10))
    argv = [str(suite), "--out", str(tmp_path / "o"), "--quiet"]
    for bound in bounds:
        argv += ["--fail-under", bound]
    assert run_eval(argv) == code
    err = capsys.readouterr().err
    if bounds == ["bogus=0.5"]:
        assert "valid metrics:" in err and "recall" in err and "cohenKappa" in err
    if code == 1:
        assert "FAIL --fail-under" in err
    if bounds[0].endswith(("nan", "inf")):
        assert "the bound must be a finite number" in err


def test_fail_under_undefined_metric_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = write_suite(tmp_path / "s", [{"id": "u", "context": {"final_output": "fine"}}])
    assert run_eval([str(suite), "--out", str(tmp_path / "o"), "--quiet", "--fail-under", "recall=0.1"]) == 1
    assert "undefined" in capsys.readouterr().err


def test_bad_suite_exits_2_with_located_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = write_suite(tmp_path / "s", [{"id": "a", "context": {"final_output": "x"}}])
    (tmp_path / "s" / "cases.jsonl").write_text('{"id": "a", "context": {}}\n{"id": "b", "label": "maybe"}\n')
    assert main(["eval", str(suite), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "cases.jsonl:2: label" in err and "cases.jsonl:2: context: Field required" in err
    assert main(["eval", str(tmp_path / "missing.yaml"), "--out", str(tmp_path / "o")]) == 2
    assert "suite file not found" in capsys.readouterr().err
    assert main(["eval", str(suite), "--out", str(tmp_path / "o"), "--concurrency", "0"]) == 2


def test_second_run_is_served_from_cache_through_the_sdk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = write_suite(tmp_path / "s", labelled_rows(8), LLM_CONFIG)
    with LLMServer(handler=judge_by_marker) as server:
        for key, value in server.env("openai").items():
            monkeypatch.setenv(key, value)
        monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
        argv = ["eval", str(suite), "--out", str(tmp_path / "o"), "--cache", str(tmp_path / "c.sqlite")]
        assert main([*argv, "--repeats", "2"]) == 0
        assert len(server.requests) == 16
        first = json.loads((tmp_path / "o" / "report.json").read_text())
        assert first["errors"] == 0 and first["cachedResults"] == 0
        server.reset()
        capsys.readouterr()
        assert main([*argv, "--repeats", "2"]) == 0
        assert server.requests == []  # no provider calls at all
        second = json.loads((tmp_path / "o" / "report.json").read_text())
        assert second["cachedResults"] == 16
        assert "no provider calls" in capsys.readouterr().out
        assert stable_view(second) == stable_view(first)
        assert main([*argv, "--repeats", "2", "--no-cache"]) == 0
        assert len(server.requests) == 16  # --no-cache bypasses it


def test_eval_cache_lives_next_to_the_output_folder_by_default(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "suite", labelled_rows(4))
    runs = tmp_path / "runs"
    judge = ScriptedJudge()
    assert run_eval([str(suite), "--out", str(runs / "first"), "--quiet"], judge=judge) == 0
    assert (runs / CACHE_NAME).is_file() and not (runs / "first" / CACHE_NAME).exists()
    assert judge.calls == 4
    assert run_eval([str(suite), "--out", str(runs / "second"), "--quiet"], judge=judge) == 0
    assert judge.calls == 4  # a sibling output folder shares it
    report = json.loads((runs / "second" / "report.json").read_text())
    assert report["cachedResults"] == 4
    assert run_eval([str(suite), "--out", str(tmp_path / "elsewhere" / "o"), "--quiet"], judge=judge) == 0
    assert judge.calls == 8  # another parent folder, another cache


SLOW_RUNNER = """
import sys
from judge.cli import build_parser
from judge.cli.eval import eval_main
from tests.evaluation.test_runner import ScriptedJudge
sys.exit(eval_main(build_parser().parse_args(sys.argv[1:]), judge=ScriptedJudge(delay=0.05)))
"""


@pytest.mark.slow
def test_killed_run_resumed_gives_the_identical_report(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s", labelled_rows(60))
    killed = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = ["eval", str(suite), "--out", str(killed), "--concurrency", "2", "--quiet", "--no-cache"]
    proc = subprocess.Popen([sys.executable, "-c", SLOW_RUNNER, *argv], cwd=REPO, env=env)
    results = killed / "results.jsonl"
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            if results.exists() and results.read_text().count("\n") >= 10:
                break
            assert proc.poll() is None, "the run ended before it could be killed"
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=10)
    kept = read_results(results)
    assert 10 <= len(kept) < 60, len(kept)
    assert not (killed / "report.json").exists()

    judge = ScriptedJudge()
    assert run_eval([str(suite), "--out", str(killed), "--resume", "--quiet", "--no-cache"], judge=judge) == 0
    assert judge.calls == 60 - len(kept)  # only the missing pairs ran
    straight = tmp_path / "straight"
    assert run_eval([str(suite), "--out", str(straight), "--quiet", "--no-cache"]) == 0
    resumed_report = json.loads((killed / "report.json").read_text())
    straight_report = json.loads((straight / "report.json").read_text())
    assert stable_view(resumed_report) == stable_view(straight_report)
    assert resumed_report["n"] == 60
    order = [json.loads(line)["id"] for line in (killed / "results.jsonl").read_text().splitlines()]
    assert sorted(order) == [f"c{i:03d}" for i in range(60)]
    # run.json describes each run itself: the resumed one judged only what was missing.
    resumed_run = json.loads((killed / "run.json").read_text())
    straight_run = json.loads((straight / "run.json").read_text())
    assert (resumed_run["judgements"], resumed_run["resumed"]) == (60 - len(kept), True)
    assert (straight_run["judgements"], straight_run["resumed"]) == (60, False)
    assert straight_run["judgingSeconds"] > 0 and straight_run["judgementsPerSecond"] > 0


def test_interrupt_keeps_results_and_says_resume(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = write_suite(tmp_path / "s", labelled_rows(6))

    class Interrupting(ScriptedJudge):
        async def evaluate(self, request: Any) -> Any:
            if self.calls >= 3:
                raise KeyboardInterrupt
            return await super().evaluate(request)

    code = run_eval(
        [str(suite), "--out", str(tmp_path / "o"), "--concurrency", "1", "--quiet"], Interrupting()
    )
    assert code == 2
    assert "--resume" in capsys.readouterr().err
    assert len(read_results(tmp_path / "o" / "results.jsonl")) == 3
    judge = ScriptedJudge()
    assert run_eval([str(suite), "--out", str(tmp_path / "o"), "--resume", "--quiet"], judge) == 0
    assert judge.calls == 3


def test_a_forced_stop_is_scored_as_a_block_in_junit_and_html_as_in_report_json(tmp_path: Path) -> None:
    # at stop_rejection_count 2 of maxRejections 3 the judge's block forces the stop through
    rows = [
        {
            "id": "good",
            "context": {"final_output": "answer 1 BAD", "stop_rejection_count": 2},
            "label": "allow",
        },
        {
            "id": "bad",
            "context": {"final_output": "answer 2 BAD", "stop_rejection_count": 2},
            "label": "block",
        },
    ]
    suite = write_suite(tmp_path / "s", rows)
    out = tmp_path / "out"
    assert run_eval([str(suite), "--out", str(out), "--quiet"]) == 0
    assert {r.id: (r.decision, r.forced_stop) for r in read_results(out / "results.jsonl")} == {
        "good": ("allow", True),
        "bad": ("allow", True),
    }
    report = json.loads((out / "report.json").read_text())
    assert report["confusion"] == {"tp": 1, "fp": 1, "tn": 0, "fn": 0}
    cases = {tc.attrib["name"]: tc for tc in ET.parse(out / "junit.xml").getroot().iter("testcase")}
    failure = cases["good"].find("failure")
    assert (
        failure is not None and "judge said block (the stop was forced through" in failure.attrib["message"]
    )
    assert cases["bad"].find("failure") is None
    page = (out / "report.html").read_text()
    assert "Disagreements (1)" in page and "<b>good</b>" in page and "<b>bad</b>" not in page


def test_an_impossible_stop_scores_as_a_block_and_is_reported_on_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        {"id": "stuck", "context": {"final_output": "NEEDS-USER: deploy key"}, "label": "block"},
        {"id": "stuck-but-fine", "context": {"final_output": "NEEDS-USER: done anyway"}, "label": "allow"},
        {"id": "done", "context": {"final_output": "all done"}, "label": "allow"},
        {"id": "bad", "context": {"final_output": "answer 1 BAD"}, "label": "block"},
    ]
    suite = write_suite(tmp_path / "s", rows)
    out = tmp_path / "out"
    assert run_eval([str(suite), "--out", str(out)]) == 0
    summary = capsys.readouterr().out
    assert "stop outcomes: approved 1, rejected 1, impossible 2 (impossible rate 0.5" in summary
    results = {r.id: (r.decision, r.outcome) for r in read_results(out / "results.jsonl")}
    assert results["stuck"] == ("allow", "impossible") and results["bad"] == ("block", "rejected")
    report = json.loads((out / "report.json").read_text())
    assert report["confusion"] == {"tp": 2, "fp": 1, "tn": 1, "fn": 0}  # impossible is a block
    assert report["outcomes"] == {"approved": 1, "rejected": 1, "impossible": 2}
    assert (report["impossible"], report["impossibleRate"]) == (2, 0.5)
    assert report["ci95"]["impossibleRate"][0] < 0.5 < report["ci95"]["impossibleRate"][1]
    cases = {tc.attrib["name"]: tc for tc in ET.parse(out / "junit.xml").getroot().iter("testcase")}
    failure = cases["stuck-but-fine"].find("failure")
    assert (
        failure is not None
        and "judge said block (impossible: the work cannot be finished without the user)"
        in (failure.attrib["message"])
    )
    assert cases["stuck"].find("failure") is None
    page = (out / "report.html").read_text()
    assert "<h2>Stop outcomes</h2>" in page and "<td>impossible</td><td class=num>2</td>" in page
    assert "impossible rate" in page
    assert run_eval([str(suite), "--out", str(out), "--quiet", "--fail-over", "impossibleRate=0.25"]) == 1


def test_a_results_file_that_cannot_be_written_stops_the_run_before_any_judgement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = write_suite(tmp_path / "s", labelled_rows(2))
    out = tmp_path / "out"
    (out / "results.jsonl").mkdir(parents=True)
    judge = ScriptedJudge()
    for extra in ([], ["--resume"]):
        assert run_eval([str(suite), "--out", str(out), "--quiet", *extra], judge=judge) == 2
        assert "cannot write" in capsys.readouterr().err
    assert judge.calls == 0


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            '{"id": "a", "context": {"final_output": "x", "current_turn": ' + "9" * 5000 + "}}",
            "malformed JSON: Exceeds",
        ),
        (
            '{"id": "a", "context": {}, "transcript_path": "' + "a" * 5000 + '"}',
            "transcript_path cannot be used: File name too long",
        ),
        (
            '{"id": "a", "context": {"execution_summary": "a\\u0000b"}}',
            "execution_summary: Value error, a path cannot hold a NUL byte",
        ),
        (
            '{"id": "a", "context": {"final_output": "x", "execution_summary": "transcripts/a.txtt"}}',
            "case 'a': execution_summary not found: transcripts/a.txtt",
        ),
        (  # the engine reads execution_summary first: it is checked beside transcript_path
            '{"id": "a", "context": {"execution_summary": "a.txtt"}, "transcript_path": "cases.jsonl"}',
            "case 'a': execution_summary not found: a.txtt",
        ),
        (
            '{"id": "a", "context": {"stop_rejection_count": 10000000000}}',
            "stop_rejection_count: Input should be less than or equal to",
        ),
    ],
)
def test_odd_case_lines_are_located_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, expected: str
) -> None:
    suite = write_suite(tmp_path / "s", [])
    (tmp_path / "s" / "cases.jsonl").write_text(line + "\n", encoding="utf-8")
    assert run_eval([str(suite), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "cases.jsonl:1: " in err and expected in err and "Traceback" not in err


def test_cases_holding_lone_surrogates_are_judged_cached_and_reported(tmp_path: Path) -> None:
    rows = [
        {"id": "a", "context": {"final_output": "answer 1 BAD \ud800"}, "label": "allow"},
        {"id": "b", "context": {"final_output": "fine"}, "transcript": "USER: hi \udcff", "label": "allow"},
    ]
    suite = write_suite(tmp_path / "s", rows)
    (tmp_path / "s" / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    for run in ("o1", "o2"):  # the second from the cache
        assert run_eval([str(suite), "--out", str(tmp_path / run), "--quiet"]) == 0
        report = json.loads((tmp_path / run / "report.json").read_text())
        assert report["errors"] == 0 and report["accuracy"] == 0.5
        assert "incomplete: answer 1 BAD" in (tmp_path / run / "report.html").read_text()  # a disagreement
    assert json.loads((tmp_path / "o2" / "report.json").read_text())["cachedResults"] == 2


# --------------------------------------------------------------------------- errors


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
