"""`judge tune` and `judge tune --compare` through the command line, with fake models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from judge.cli import main

BASE = (
    'Check that the answer is complete.\n$ARGUMENTS\nRespond {"ok": true} or {"ok": false, "reason": "..."}\n'
)
MARKED = (
    'Check that the response ends with "Task complete."\n$ARGUMENTS\n'
    'Respond {"ok": true} or {"ok": false, "reason": "..."}\n'
)


def write(tmp: Path, prompt: str = BASE, name: str = "agent.yaml", n: int = 60, labels: bool = True) -> Path:
    config = {"hooks": {"Stop": [{"type": "prompt", "prompt": prompt, "model": "fake:heuristic"}]}}
    (tmp / name).write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    rows = []
    for i in range(n):
        done = i % 2 == 0
        text = "The report is attached." + (" Task complete." if done else "")
        context = {"hook_event_name": "Stop", "final_output": text}
        row = {"id": f"c{i}", "context": context, "group": f"g{i // 3}"}
        if labels:
            row["label"] = "allow" if done else "block"
        rows.append(row)
    (tmp / "cases.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    optimizer = {
        "rules": [{"match": "Explain concisely", "reply": "The prompt never names the closing marker."}],
        "default": f"<PROMPT>\n{MARKED}</PROMPT>",
    }
    (tmp / "opt.yaml").write_text(yaml.safe_dump(optimizer), encoding="utf-8")
    suite = {"name": "marker", "config": name, "event": "Stop", "cases": "cases.jsonl"}
    (tmp / "suite.yaml").write_text(yaml.safe_dump(suite), encoding="utf-8")
    return tmp / "suite.yaml"


def tune_args(tmp: Path, *extra: str) -> list[str]:
    return [
        "tune",
        str(tmp / "suite.yaml"),
        "--hook",
        "Stop:0",
        "--out",
        str(tmp / "out"),
        "--optimizer-model",
        "fake:opt.yaml",
        "--quiet",
        *extra,
    ]


def test_tune_finds_the_marker_and_writes_its_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path)
    assert main(tune_args(tmp_path, "--rounds", "2")) == 0
    out = capsys.readouterr().out
    assert "is better on the held-out test split" in out
    best = yaml.safe_load((tmp_path / "out" / "best.yaml").read_text())
    assert best["hooks"]["Stop"][0]["prompt"] == MARKED
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["winner"] != summary["baseline"] and summary["test"]["regressed"] == []
    assert summary["optimizerModel"] == "fake:opt.yaml"
    assert (tmp_path / "out" / "report.html").is_file()
    lines = (tmp_path / "out" / "candidates.jsonl").read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines][:2] == ["c0", "c1"]


def test_compare_two_configs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, MARKED, name="b.yaml")
    write(tmp_path, BASE, name="a.yaml")
    code = main(
        [
            "tune",
            "--compare",
            str(tmp_path / "a.yaml"),
            str(tmp_path / "b.yaml"),
            str(tmp_path / "suite.yaml"),
            "--out",
            str(tmp_path / "cmp"),
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "fixed by" in printed and "exact McNemar p" in printed
    data = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    improved = [i["id"] for i in data["comparison"]["improved"]]
    assert improved == [f"c{i}" for i in range(1, 60, 2)]  # every unmarked answer is now blocked
    assert data["comparison"]["regressed"] == []
    assert data["comparison"]["p_value"] < 1e-6
    assert (tmp_path / "cmp" / "compare.html").is_file()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--max-calls", "5"], "too small"),
        (["--split", "50/50"], "TRAIN/DEV/TEST"),
        (["--beam", "0"], "--beam must be at least 1"),
        (["--hook", "Stop:4"], "has 1 agent-level Stop hook"),
        (["--hook", "PostToolUse:0"], "are Stop events"),
        (["--hook", "nonsense"], "EVENT:INDEX"),
        (["--optimizer-model", "fake:missing.yaml"], "unknown fake model"),
        (["--min-block-precision", "1.5"], "--min-block-precision must be above 0 and at most 1"),
        (["--objective", "pairwise"], "needs paired cases"),
        (["--optimizer-template", "nowhere.md"], "--optimizer-template nowhere.md: file not found"),
        (["--demos", "-1"], "--demos must be at least 0"),
        (["--merges", "-1"], "--merges must be at least 0"),
        (["--max-usd", "0"], "--max-usd must be above 0"),
    ],
)
def test_bad_input_exits_2_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    write(tmp_path, n=12)
    assert main(tune_args(tmp_path, *extra)) == 2
    captured = capsys.readouterr()
    assert message in captured.err and "Traceback" not in captured.err


def test_an_out_dir_that_cannot_be_created_fails_before_any_llm_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, n=12)
    (tmp_path / "out").write_text("a file, not a folder")
    assert main(tune_args(tmp_path)) == 2
    captured = capsys.readouterr()
    assert f"cannot create --out {tmp_path / 'out'}: File exists" in captured.err
    assert captured.out == ""  # nothing was tuned
    compare = ["tune", "--compare", str(tmp_path / "agent.yaml"), str(tmp_path / "agent.yaml")]
    assert main([*compare, str(tmp_path / "suite.yaml"), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    captured = capsys.readouterr()
    assert "cannot create --out" in captured.err and captured.out == ""


def test_missing_out_suite_and_labels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, labels=False, n=6)
    assert main(["tune", str(tmp_path / "suite.yaml")]) == 2
    assert "--out DIR is required" in capsys.readouterr().err
    assert main(tune_args(tmp_path)) == 2
    assert "no labelled cases" in capsys.readouterr().err
    assert main(["tune", str(tmp_path / "nope.yaml"), "--out", str(tmp_path / "o")]) == 2
    assert "suite file not found" in capsys.readouterr().err
    assert main(["tune"]) == 2
    assert "usage" in capsys.readouterr().err


def test_best_config_keeps_the_resource_form(tmp_path: Path) -> None:
    from judge.config import load_config
    from judge.tuning.outputs import config_with_prompt, dump_yaml

    doc = {
        "api_version": "azuresre.ai/v2",
        "kind": "ExtendedAgent",
        "metadata": {"name": "agent"},
        "spec": {"instructions": "Be helpful.", "hooks": {"Stop": [{"type": "prompt", "prompt": BASE}]}},
    }
    path = tmp_path / "resource.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    best = tmp_path / "best.yaml"
    best.write_text(dump_yaml(config_with_prompt(path, "Stop", 0, MARKED)), encoding="utf-8")
    assert "prompt: |" in best.read_text()
    loaded = load_config(best)
    assert loaded.name == "agent" and loaded.hooks.Stop[0].prompt == MARKED


def test_a_baseline_only_run_needs_no_optimizer_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path)
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "JUDGE_MODEL_REASONING"):
        monkeypatch.delenv(key, raising=False)
    args = ["tune", str(tmp_path / "suite.yaml"), "--hook", "Stop:0", "--out", str(tmp_path / "out")]
    assert main([*args, "--rounds", "0", "--quiet"]) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert summary["optimizerModel"] == "none (--rounds 0)"
    # With rounds to run, the missing optimizer key is still reported up front.
    assert main([*args, "--rounds", "1", "--quiet"]) == 2
    assert "API_KEY" in capsys.readouterr().err


def test_a_judge_that_cannot_be_called_is_an_error_not_a_score_of_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path)
    config = {"hooks": {"Stop": [{"type": "prompt", "prompt": BASE, "model": "openai:gpt-4o-mini"}]}}
    (tmp_path / "agent.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main([*tune_args(tmp_path), "--rounds", "0"]) == 2
    err = capsys.readouterr().err
    assert "every judgement of the hook's own prompt" in err and "OPENAI_API_KEY is not set" in err
    assert not (tmp_path / "out" / "best.yaml").exists()
    agent = str(tmp_path / "agent.yaml")
    assert main(["tune", "--compare", agent, agent, str(tmp_path / "suite.yaml")]) == 2
    assert "OPENAI_API_KEY is not set" in capsys.readouterr().err
