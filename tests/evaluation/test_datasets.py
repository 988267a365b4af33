"""Dataset converters: LLMBar pairs and τ-bench trajectories into eval suites, then a slice is judged."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from judge.cli import build_parser, main
from judge.cli.eval import eval_main
from judge.evaluation.suite import load_suite
from tests.evaluation.test_runner import ScriptedJudge

DATASETS = Path(__file__).resolve().parents[2].parent / "shared" / "datasets"
LLMBAR = DATASETS / "llmbar" / "natural.json"
TAU = DATASETS / "tau-bench" / "gpt-4o-airline.json"

needs_llmbar = pytest.mark.skipif(not LLMBAR.is_file(), reason=f"LLMBar dataset not found at {LLMBAR}")
needs_tau = pytest.mark.skipif(not TAU.is_file(), reason=f"tau-bench dataset not found at {TAU}")


def cases_of(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "cases.jsonl").read_text(encoding="utf-8").splitlines()]


def judged_slice(suite: Path, out: Path) -> dict[str, Any]:
    args = build_parser().parse_args(["eval", str(suite), "--out", str(out), "--quiet", "--no-cache"])
    assert eval_main(args, judge=ScriptedJudge()) == 0
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    return report


@needs_llmbar
def test_llmbar_conversion_and_eval(tmp_path: Path) -> None:
    items = json.loads(LLMBAR.read_text(encoding="utf-8"))
    folder = tmp_path / "llmbar"
    assert main(["datasets", "convert", "llmbar", str(LLMBAR), "--out", str(folder)]) == 0
    cases = cases_of(folder)
    assert len(cases) == 2 * len(items)
    by_group: dict[str, list[dict[str, Any]]] = {}
    for case in cases:
        by_group.setdefault(case["group"], []).append(case)
    assert len(by_group) == len(items)
    for (group, pair), item in zip(by_group.items(), items, strict=True):
        assert sorted(c["label"] for c in pair) == ["allow", "block"], group
        better = next(c for c in pair if c["label"] == "allow")
        assert better["context"]["final_output"] == item[f"output_{item['label']}"]
        assert item["input"].splitlines()[0] in better["transcript"]  # the user's request
        assert better["context"]["hook_event_name"] == "Stop"
    suite = load_suite(folder / "suite.yaml")
    assert suite.event == "Stop" and len(suite.cases) == len(cases)

    small = tmp_path / "small"
    assert main(["datasets", "convert", "llmbar", str(LLMBAR), "--out", str(small), "--limit", "3"]) == 0
    report = judged_slice(small / "suite.yaml", tmp_path / "out")
    assert report["n"] == 6 and report["errors"] == 0
    # the scripted judge allows everything: every "block" label is a false pass
    assert report["confusion"] == {"tp": 0, "fp": 0, "tn": 3, "fn": 3}


@needs_tau
def test_tau_bench_conversion_and_eval(tmp_path: Path) -> None:
    items = json.loads(TAU.read_text(encoding="utf-8"))
    folder = tmp_path / "tau"
    assert main(["datasets", "convert", "tau-bench", str(TAU), "--out", str(folder), "--limit", "12"]) == 0
    cases = cases_of(folder)
    assert len(cases) == 12
    for case, item in zip(cases, items[:12], strict=True):
        assert case["label"] == ("allow" if item["reward"] == 1 else "block")
        assert case["group"] == f"task-{item['task_id']}"
        transcript = (folder / case["transcript_path"]).read_text(encoding="utf-8")
        first_user = next(m["content"] for m in item["traj"] if m["role"] == "user")
        assert first_user in transcript
        tool_calls = [c for m in item["traj"] for c in (m.get("tool_calls") or [])]
        for call in tool_calls[:3]:
            assert call["function"]["name"] in transcript
        last = [m for m in item["traj"] if m["role"] == "assistant" and m.get("content")][-1]
        assert case["context"]["final_output"] == last["content"]
    assert Counter(c["label"] for c in cases) == Counter(
        "allow" if i["reward"] == 1 else "block" for i in items[:12]
    )
    report = judged_slice(folder / "suite.yaml", tmp_path / "out")
    assert report["n"] == 12 and report["errors"] == 0
    assert report["confusion"]["tp"] + report["confusion"]["fp"] == 0  # scripted judge allows all


@needs_tau
def test_tau_bench_full_conversion_groups_by_task(tmp_path: Path) -> None:
    folder = tmp_path / "tau"
    assert main(["datasets", "convert", "tau-bench", str(TAU), "--out", str(folder)]) == 0
    cases = cases_of(folder)
    items = json.loads(TAU.read_text(encoding="utf-8"))
    assert len(cases) == len(items) and len({c["id"] for c in cases}) == len(cases)
    groups = Counter(c["group"] for c in cases)
    assert len(groups) == len({i["task_id"] for i in items})


def test_converter_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.json"
    assert main(["datasets", "convert", "llmbar", str(missing), "--out", str(tmp_path / "o")]) == 2
    assert "file not found" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"input": "i", "output_1": "a", "output_2": "b", "label": 3}]))
    assert main(["datasets", "convert", "llmbar", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "item 0: 'label' must be 1 or 2" in capsys.readouterr().err
    bad.write_text(json.dumps({"not": "a list"}))
    assert main(["datasets", "convert", "tau-bench", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "expected a JSON list" in capsys.readouterr().err


def test_converter_keeps_an_existing_agent_config(tmp_path: Path) -> None:
    source = tmp_path / "pairs.json"
    source.write_text(json.dumps([{"input": "Say hi.", "output_1": "hi", "output_2": "bye", "label": 1}]))
    out = tmp_path / "suite"
    out.mkdir()
    tuned = "hooks:\n  Stop:\n    - type: prompt\n      prompt: tuned $ARGUMENTS\n"
    (out / "agent.yaml").write_text(tuned)
    assert main(["datasets", "convert", "llmbar", str(source), "--out", str(out)]) == 0
    assert (out / "agent.yaml").read_text() == tuned
    assert [c["label"] for c in cases_of(out)] == ["allow", "block"]


def test_tau_bench_bad_item_leaves_no_partial_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = {"task_id": 1, "trial": 0, "reward": 1.0, "traj": [{"role": "assistant", "content": "done"}]}
    source = tmp_path / "tau.json"
    source.write_text(json.dumps([good, {**good, "traj": "not a list"}]))
    out = tmp_path / "o"
    assert main(["datasets", "convert", "tau-bench", str(source), "--out", str(out)]) == 2
    assert "item 1: 'traj' must be a list of messages" in capsys.readouterr().err
    assert not out.exists()


def test_tau_bench_task_ids_cannot_write_outside_the_suite(tmp_path: Path) -> None:
    item = {"task_id": "../../escape", "trial": 0, "reward": 0, "traj": [{"role": "user", "content": "hi"}]}
    source = tmp_path / "tau.json"
    source.write_text(json.dumps([item]))
    out = tmp_path / "a" / "b"
    assert main(["datasets", "convert", "tau-bench", str(source), "--out", str(out)]) == 0
    assert [p.name for p in (out / "transcripts").iterdir()] == ["tau-.._.._escape-t0.txt"]
    assert not (tmp_path / "escape-t0.txt").exists()
    suite = load_suite(out / "suite.yaml")
    assert suite.cases[0].transcript_path == "transcripts/tau-.._.._escape-t0.txt"


def test_tau_bench_task_ids_that_clean_to_one_name_keep_their_own_transcripts(tmp_path: Path) -> None:
    items = [
        {"task_id": task, "trial": 0, "reward": 1, "traj": [{"role": "assistant", "content": f"from {task}"}]}
        for task in ("a/b", "a_b", "a:b")
    ]
    source = tmp_path / "tau.json"
    source.write_text(json.dumps(items))
    out = tmp_path / "o"
    assert main(["datasets", "convert", "tau-bench", str(source), "--out", str(out)]) == 0
    suite = load_suite(out / "suite.yaml")
    paths = [c.transcript_path for c in suite.cases]
    assert len(set(paths)) == 3
    for case, path in zip(suite.cases, paths, strict=True):
        assert path is not None
        assert f"from {case.id.removeprefix('tau-').removesuffix('-t0')}" in (out / path).read_text()


def test_a_number_too_long_to_read_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "pairs.json"
    source.write_text('[{"input": "i", "output_1": "a", "output_2": "b", "label": ' + "1" * 5000 + "}]")
    assert main(["datasets", "convert", "llmbar", str(source), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "malformed JSON: Exceeds the limit" in err and "Traceback" not in err
