"""Suite loading: the suite format and located errors; the offline smoke suite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from judge.cli import main
from judge.errors import SuiteError
from judge.evaluation.suite import load_suite
from tests.evaluation.test_runner import write_suite

REPO = Path(__file__).resolve().parents[2]


def test_loads_a_valid_suite(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "t.txt").write_text("transcript", encoding="utf-8")
    rows: list[dict[str, Any]] = [
        {"id": "a", "context": {"final_output": "x"}, "label": "allow", "tags": ["k"], "group": "g"},
        {"id": 7, "context": {"final_output": "y"}, "transcript_path": "t.txt"},
        {"id": "c", "context": {"final_output": "z"}, "transcript": "inline", "label": None},
    ]
    suite = load_suite(write_suite(tmp_path / "s", rows))
    assert suite.name == "t" and suite.event == "Stop" and suite.repeats == 1
    assert [c.id for c in suite.cases] == ["a", "7", "c"]
    assert suite.cases[0].tags == ["k"] and suite.cases[0].group == "g"
    assert suite.base_dir == (tmp_path / "s").resolve()
    assert suite.config.hooks.Stop[0].type == "prompt"


def test_bad_cases_are_reported_with_file_and_line(tmp_path: Path) -> None:
    path = write_suite(tmp_path / "s", [])
    lines = [
        json.dumps({"id": "ok", "context": {"final_output": "x"}}),
        "{not json",
        json.dumps({"id": "lab", "context": {}, "label": "maybe"}),
        "",
        json.dumps({"id": "ok", "context": {}}),
        json.dumps({"id": "both", "context": {}, "transcript": "a", "transcript_path": "b"}),
        json.dumps({"id": "gone", "context": {}, "transcript_path": "missing.txt"}),
        json.dumps({"id": "ctx", "context": {"stop_rejection_count": -1}}),
        json.dumps({"id": "extra", "context": {}, "lable": "allow"}),
        json.dumps({"id": "why", "context": {}, "rationale": "no label to explain"}),
        json.dumps({"id": "long", "context": {}, "label": "block", "rationale": "x" * 4001}),
        json.dumps(["a", "list"]),
        '{"id": "twice", "context": {}, "label": "allow", "label": "block"}',
        "[" * 100_000,
    ]
    (tmp_path / "s" / "cases.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    problems = info.value.problems
    text = "\n".join(problems)
    assert "cases.jsonl:2: malformed JSON" in text
    assert "cases.jsonl:3: label: Input should be 'allow' or 'block'" in text
    assert "cases.jsonl:5: duplicate id 'ok' (first on line 1)" in text
    assert "cases.jsonl:6: give either `transcript` or `transcript_path`, not both" in text
    assert "cases.jsonl:7: case 'gone': transcript_path not found: missing.txt" in text
    assert "cases.jsonl:8: case 'ctx': invalid context: stop_rejection_count" in text
    assert "cases.jsonl:9: lable: unknown key" in text
    assert "cases.jsonl:10: `rationale` explains a label: give `label` too" in text
    assert "cases.jsonl:11: rationale: String should have at most 4000 characters" in text
    assert "cases.jsonl:12: each line must be a JSON object" in text
    assert "cases.jsonl:13: duplicate key 'label'" in text
    assert "cases.jsonl:14: malformed JSON: nested too deeply" in text
    assert len(problems) == 12


def test_a_misspelt_case_key_or_label_names_the_one_meant(tmp_path: Path) -> None:
    path = write_suite(tmp_path / "s", [])
    lines = [
        json.dumps({"id": "a", "contxt": {"final_output": "x"}}),
        json.dumps({"id": "b", "context": {}, "label": "Block"}),
        json.dumps({"id": "c", "context": {}, "recorded": {"decison": "allow"}}),
    ]
    (tmp_path / "s" / "cases.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    problems = [p.split("cases.jsonl:", 1)[1] for p in info.value.problems]
    assert problems == [
        "1: context: Field required",
        "1: contxt: unknown key (did you mean context?)",
        "2: label: Input should be 'allow' or 'block' (did you mean block?)",
        "3: recorded.decision: Field required",
        "3: recorded.decison: unknown key (did you mean decision?)",
    ]


@pytest.mark.parametrize(
    ("suite_text", "expected"),
    [
        ("config: agent.yaml\nevent: Nope\ncases: cases.jsonl\n", "event: unknown event 'Nope'"),
        (
            "config: agent.yaml\ncases: cases.jsonl\nrepeats: 0\n",
            "repeats: Input should be greater than or equal to 1",
        ),
        ("event: Stop\ncases: cases.jsonl\n", "config: Field required"),
        ("config: agent.yaml\ncases: cases.jsonl\nextra: 1\n", "extra: unknown key"),
        ("config: agent.yaml\ncases: cases.jsonl\nevnt: Stop\n", "evnt: unknown key (did you mean event?)"),
        (
            "config: agent.yaml\nevent: stop\ncases: cases.jsonl\n",
            "unknown event 'stop' (did you mean Stop?)",
        ),
        ("config: other.yaml\ncases: cases.jsonl\n", "file not found"),
        ("config: agent.yaml\ncases: nothere.jsonl\n", "cases file not found"),
        ("config: [unclosed\n", "malformed YAML"),
        ("- a list\n", "a suite must be a mapping"),
        (
            "config: agent.yaml\ncases: cases.jsonl\ncases: other.jsonl\n",
            "cases: duplicate key 'cases' at line 3",
        ),
        ("config: " + "[" * 100_000, "malformed YAML: nested too deeply"),
    ],
)
def test_bad_suite_files(tmp_path: Path, suite_text: str, expected: str) -> None:
    path = write_suite(tmp_path / "s", [{"id": "a", "context": {}}])
    path.write_text(suite_text, encoding="utf-8")
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    assert expected in str(info.value)


def test_invalid_hook_config_is_a_suite_error(tmp_path: Path) -> None:
    path = write_suite(
        tmp_path / "s", [{"id": "a", "context": {}}], {"hooks": {"Stop": [{"type": "prompt"}]}}
    )
    with pytest.raises(SuiteError, match=r"agent.yaml: hooks.Stop\[0\].prompt"):
        load_suite(path)


def test_empty_cases_file(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="no cases"):
        load_suite(write_suite(tmp_path / "s", []))


def test_smoke_suite_runs_offline_with_the_fake_provider(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "JUDGE_MODEL_REASONINGFAST"):
        monkeypatch.delenv(key, raising=False)
    suite = REPO / "evals" / "smoke" / "suite.yaml"
    out = tmp_path / "smoke"
    code = main(["eval", str(suite), "--out", str(out), "--cache", str(tmp_path / "c.sqlite"), "--quiet"])
    assert code == 0
    report = json.loads((out / "report.json").read_text())
    assert report["n"] == len(load_suite(suite).cases) and report["errors"] == 0
    assert report["labelled"] == report["n"] - 1
    assert report["tokens"]["inputTokens"] > 0  # the prompt hook went through the fake provider
    assert report["balancedAccuracy"] is not None and report["balancedAccuracy"] >= 0.8


def test_a_case_holding_a_unicode_line_separator_loads(tmp_path: Path) -> None:
    # `judge datasets convert` writes raw text (ensure_ascii=False); only "\n" ends a line
    suite = write_suite(tmp_path / "s", [])
    row = {"id": "a", "context": {"final_output": "one\u2028two\u2029three\x85four"}, "label": "allow"}
    (tmp_path / "s" / "cases.jsonl").write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    loaded = load_suite(suite)
    assert [c.context["final_output"] for c in loaded.cases] == ["one\u2028two\u2029three\x85four"]
