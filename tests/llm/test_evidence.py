"""`evidence: required`: the config option, the citation checks, what the gate answers
(reason with the verified evidence, `citations` in the hook result, failMode after an
unverified re-ask), `judge run` / `judge validate`, and the evidence eval suite."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from judge.cli import main as cli_main
from judge.config import config_from_data
from judge.decision import Citation
from judge.hooks.engine import Engine
from judge.llm import LLMJudge
from judge.llm.evidence import (
    MAX_CITATIONS,
    REASON_EVIDENCE_CHARS,
    check_citation,
    parse_citations,
    with_evidence,
)
from judge.llm.providers.fake import FakeProvider
from judge.llm.tools import ToolDeadline

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "t.txt"
    lines = [f"step {i}" for i in range(1, 31)]
    lines[9] = "tool   pytest ->\t2 failed,   5 passed"
    lines[10] = "warning: the fixture was skipped"
    path.write_text("\n".join(lines) + "\n")
    return path


def checked(quote: str, line: int, path: Path) -> str | None:
    found, problems = parse_citations([{"line": line, "quote": quote}])
    assert not problems, problems
    return check_citation(found[0], path, ToolDeadline(), 30)


def test_quotes_are_compared_whitespace_normalised_within_two_lines(transcript: Path) -> None:
    assert checked("pytest -> 2 failed, 5 passed", 10, transcript) is None
    assert (
        checked("pytest ->  2 failed,\n5 passed", 12, transcript) is None
    )  # two lines off: still in the window
    assert checked("2 failed, 5 passed warning: the fixture", 10, transcript) is None  # across a line break
    assert checked("    10\ttool   pytest -> 2 failed", 10, transcript) is None  # a copied ReadFile prefix
    assert "is not on lines 11-15" in (checked("pytest -> 2 failed", 13, transcript) or "")
    assert "is not on lines" in (checked("PYTEST -> 2 FAILED", 10, transcript) or "")  # case matters
    assert "is not on lines" in (checked("pytest -> 2 failed ... 5 passed", 10, transcript) or "")


def test_evidence_in_the_reason_is_bounded() -> None:
    citations = [Citation(line=i, quote="q" * 500) for i in range(1, MAX_CITATIONS + 1)]
    reason = with_evidence("Fix it.", citations) or ""
    evidence = reason.split("\n", 1)[1]
    assert reason.startswith('Fix it.\nEvidence: line 1: "qqq')
    assert len(evidence) <= REASON_EVIDENCE_CHARS + 200 and "more)" in evidence
    assert with_evidence("Fix it.", []) == "Fix it."


def engine(hook: dict[str, Any], replies: list[Any]) -> tuple[Engine, FakeProvider]:
    provider = FakeProvider(replies)
    config = config_from_data(
        {"hooks": {"Stop": [{"type": "prompt", "prompt": "Check. $ARGUMENTS", **hook}]}}
    )
    return Engine(config, judge=LLMJudge(provider_for=lambda _m: provider)), provider


def read_call(path: Path) -> dict[str, Any]:
    return {
        "tool_calls": [
            {"name": "ReadFile", "arguments": {"filePath": str(path), "startLine": 1, "endLine": 30}}
        ]
    }


def stop(path: Path) -> dict[str, Any]:
    return {"final_output": "All tests pass.", "execution_summary": str(path)}


async def test_the_hook_result_carries_the_citations_and_the_reason_the_evidence(transcript: Path) -> None:
    eng, _ = engine(
        {"evidence": "required"},
        [
            read_call(transcript),
            {"ok": False, "reason": "Tests fail.", "citations": [{"line": 10, "quote": "2 failed"}]},
        ],
    )
    out = (await eng.evaluate("Stop", stop(transcript))).to_json()
    assert out["decision"] == "block"
    assert out["reason"] == 'Tests fail.\nEvidence: line 10: "2 failed"'
    assert out["hooks"][0]["citations"] == [{"line": 10, "quote": "2 failed"}]


async def test_without_evidence_required_nothing_changes(transcript: Path) -> None:
    eng, provider = engine(
        {},
        [
            read_call(transcript),
            {"ok": False, "reason": "Tests fail.", "citations": [{"line": 99, "quote": "made up"}]},
        ],
    )
    out = (await eng.evaluate("Stop", stop(transcript))).to_json()
    assert out["reason"] == "Tests fail." and "citations" not in out["hooks"][0]
    assert "Evidence is required" not in provider.calls[0][0].content


@pytest.mark.parametrize(("fail_mode", "decision"), [("allow", "allow"), ("block", "block")])
async def test_unverified_twice_applies_the_fail_mode_and_says_why(
    transcript: Path, fail_mode: str, decision: str
) -> None:
    made_up = {
        "ok": False,
        "reason": "Tests fail.",
        "citations": [{"line": 10, "quote": "segfault in module x"}],
    }
    eng, provider = engine({"evidence": "required", "failMode": fail_mode}, [read_call(transcript), made_up])
    out = (await eng.evaluate("Stop", stop(transcript))).to_json()
    hook = out["hooks"][0]
    assert out["decision"] == decision and "citations" not in hook
    assert "even after a re-ask" in hook["error"] and "segfault in module x" in hook["error"]
    assert hook["usage"]["inputTokens"] > 0  # the three calls still count
    if fail_mode == "block":
        assert out["reason"].startswith("Hook error: evidence: required")
    assert len(provider.calls) == 3


def test_judge_run_prints_citations(tmp_path: Path, transcript: Path) -> None:
    script = [
        read_call(transcript),
        {"ok": False, "reason": "Tests fail.", "citations": [{"line": 11, "quote": "fixture was skipped"}]},
    ]
    (tmp_path / "script.json").write_text(json.dumps(script))
    config = tmp_path / "agent.yaml"
    hook = {"type": "prompt", "prompt": "Check.", "model": "fake:script.json", "evidence": "required"}
    config.write_text(yaml.safe_dump({"hooks": {"Stop": [hook]}}))
    context = tmp_path / "ctx.json"
    context.write_text(json.dumps(stop(transcript)))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main(["run", "--config", str(config), "--event", "Stop", "--context", str(context)])
    assert code == 0, err.getvalue()
    result = json.loads(out.getvalue())
    assert result["hooks"][0]["citations"] == [{"line": 11, "quote": "fixture was skipped"}]
    assert result["reason"].endswith('Evidence: line 11: "fixture was skipped"')


@pytest.mark.parametrize(
    ("hook", "message"),
    [
        (
            {"type": "prompt", "prompt": "x", "evidence": "sometimes"},
            "hooks.Stop[0].evidence: Input should be 'off' or 'required'",
        ),
        (
            {"type": "command", "command": "true", "evidence": "required"},
            "hooks.Stop[0].evidence: only for prompt hooks",
        ),
    ],
)
def test_validate_locates_a_bad_evidence_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], hook: dict[str, Any], message: str
) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(yaml.safe_dump({"hooks": {"Stop": [hook]}}))
    assert cli_main(["validate", str(path)]) == 1
    assert message in capsys.readouterr().err


def test_config_schema_documents_evidence(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["config", "schema"]) == 0
    schema = capsys.readouterr().out
    assert '"evidence"' in schema and "re-asked once" in schema


async def test_the_evidence_suite_catches_every_hallucinated_citation() -> None:
    import sys

    sys.path.insert(0, str(REPO / "bench"))
    try:
        from bench_evidence import run_mode
    finally:
        sys.path.remove(str(REPO / "bench"))
    on = await run_mode("required", 1, 0.0, 4)
    off = await run_mode("off", 1, 0.0, 4)
    assert on["scripted"] == 9 and on["caught"] == 9 and on["false_alarms"] == 0
    assert (on["false_blocks"], off["false_blocks"]) == (0, 3)
    assert on["accuracy"] == 1.0 and on["calls"] > off["calls"]


def test_validate_warns_when_a_fake_judge_can_never_cite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hook = {
        "type": "prompt",
        "prompt": "Check {{ final_output }}",
        "model": "fake:heuristic",
        "evidence": "required",
    }
    path = tmp_path / "agent.yaml"
    path.write_text(yaml.safe_dump({"hooks": {"Stop": [hook]}}))
    assert cli_main(["validate", str(path)]) == 0
    assert (
        "warning: hooks.Stop[0].evidence: required, but the model 'fake:heuristic'" in capsys.readouterr().err
    )
    assert cli_main(["validate", "--strict", str(path)]) == 1


def test_judge_eval_batch_judges_evidence_hooks_the_normal_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A batch request gets no second turn, so its citations could not be re-asked: such
    # cases are judged the normal way, with the reason in the report.
    from judge.cli import build_parser
    from judge.cli.eval import eval_main
    from judge.testing import LLMServer

    cases = [{"id": f"c{i}", "context": {"final_output": "done"}, "label": "allow"} for i in range(2)]
    folder = tmp_path / "s"
    folder.mkdir()
    hook = {"type": "prompt", "prompt": "Check. $ARGUMENTS", "evidence": "required"}
    (folder / "agent.yaml").write_text(json.dumps({"hooks": {"Stop": [hook]}}))
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (folder / "suite.yaml").write_text("name: t\nconfig: agent.yaml\nevent: Stop\ncases: cases.jsonl\n")
    monkeypatch.setenv("JUDGE_BATCH_POLL_SECONDS", "0")
    with LLMServer() as server:
        for key, value in server.env("openai").items():
            monkeypatch.setenv(key, value)
        args = build_parser().parse_args(
            ["eval", str(folder / "suite.yaml"), "--out", str(tmp_path / "o"), "--batch"]
        )
        assert eval_main(args) == 0
    section = json.loads((tmp_path / "o" / "report.json").read_text())["batch"]
    assert section["judgedNormally"] == 2 and section["batches"] == []
    assert section["normalReasons"] == {"evidence: required (unverified citations need a re-ask turn)": 2}
