"""Calibrated enforcement: a prompt hook with a `calibration:` block blocks only while a
record measured for its prompt and model meets its floors; missing, stale or below, it
runs as shadow and says why. The statuses, the file's safety, `judge run`, `judge
validate`, and eval's own calibration.json making a hook enforce."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from judge.cli import main
from judge.config import config_from_data, load_config
from judge.config.prompt_options import CalibrationPolicy
from judge.errors import ConfigError
from judge.hooks.calibration import MAX_CALIBRATION_BYTES, prompt_sha256
from judge.hooks.engine import Engine
from judge.validation import check_config

PROMPT = "Is the job done? $ARGUMENTS"
MODEL = "fake:block:Run the tests."
STOP = {"hook_event_name": "Stop", "final_output": "All done.", "session_id": "s1"}


def record(
    prompt: str = PROMPT,
    model: str = MODEL,
    *,
    cases: int = 40,
    kappa: float | None = 0.8,
    precision: float = 0.9,
    index: int = 0,
    event: str = "Stop",
    agent: str | None = None,
    created: str = "2026-12-01T00:00:00.000Z",
) -> dict[str, Any]:
    """A calibration record as `judge eval` writes it."""
    return {
        "event": event,
        "index": index,
        "level": "custom" if agent else "agent",
        "agent": agent,
        "promptSha256": prompt_sha256(prompt),
        "model": model,
        "n": cases,
        "cases": cases,
        "confusion": {"tp": 18, "fp": 2, "tn": 18, "fn": 2},
        "kappa": kappa,
        "blockPrecision": precision,
        "blockRecall": 0.9,
        "allowRecall": 0.9,
        "suite": "s",
        "suiteSha256": "0" * 64,
        "judgeVersion": "0.1.0",
        "createdAt": created,
    }


def write_records(path: Path, *records: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"format": 1, "records": list(records)}))
    return path


def calibrated_config(folder: Path, prompt: str = PROMPT, model: str = MODEL, **floors: Any) -> Path:
    """judge.yaml with one calibrated Stop prompt hook that always blocks."""
    hook = {
        "type": "prompt",
        "model": model,
        "prompt": prompt,
        "maxRejections": 5,
        "calibration": {"file": "runs/cal.json", **floors},
    }
    path = folder / "judge.yaml"
    path.write_text(json.dumps({"hooks": {"Stop": [hook]}}))
    (folder / "runs").mkdir(exist_ok=True)
    return path


#: status -> how the calibration file is arranged for it (None: no file)
STATUSES: dict[str, Any] = {
    "missing": None,
    "stale": [record(prompt="Is the job done, really? $ARGUMENTS")],
    "below": [record(kappa=0.3)],
    "ok": [record()],
}


def arrange(folder: Path, status: str) -> Path:
    """A configuration whose hook's calibration has ``status``."""
    config = calibrated_config(folder)
    if STATUSES[status] is not None:
        write_records(folder / "runs" / "cal.json", *STATUSES[status])
    return config


@pytest.mark.parametrize("status", ["missing", "stale", "below", "ok"])
async def test_only_an_ok_calibration_lets_the_hook_block(tmp_path: Path, status: str) -> None:
    config = load_config(arrange(tmp_path, status))
    decision = (await Engine(config).evaluate("Stop", STOP)).to_json()
    [hook] = decision["hooks"]
    assert hook["decision"] == "block"  # what it said, always recorded
    assert hook["calibration"]["status"] == status
    if status == "ok":
        assert decision["decision"] == "block" and decision["rejectionCount"] == 1
        assert "mode" not in hook
    else:
        assert (decision["decision"], decision["rejectionCount"], hook["mode"]) == ("allow", 0, "shadow")


@pytest.mark.parametrize(
    ("records", "floors", "reason"),
    [
        (None, {}, "runs/cal.json does not exist"),
        (
            [record(model="fake:allow", index=5)],
            {},
            "runs/cal.json has no record for this hook's prompt with fake:block",
        ),
        ([record(prompt="old prompt")], {}, "its prompt changed since runs/cal.json was measured"),
        (
            [record(model="openai:gpt-x")],
            {},
            "its model changed (measured openai:gpt-x, now fake:block:Run the tests.) since runs/cal.json",
        ),
        ([record(cases=12)], {}, "12 cases < minCases 30"),
        ([record(kappa=None)], {}, "kappa undefined < minKappa 0.6"),
        (
            [record(precision=0.7)],
            {"minBlockPrecision": 0.75},
            "block precision 0.700 < minBlockPrecision 0.75",
        ),
        ([record(kappa=0.65)], {"minKappa": 0.7}, "kappa 0.650 < minKappa 0.7"),
    ],
)
def test_the_status_says_why(
    tmp_path: Path, records: list[dict[str, Any]] | None, floors: dict[str, Any], reason: str
) -> None:
    config_path = calibrated_config(tmp_path, **floors)
    if records is not None:
        write_records(tmp_path / "runs" / "cal.json", *records)
    found = load_config(config_path).calibration or {}
    assert reason in found["hooks.Stop[0]"].reason


def test_a_record_measured_elsewhere_in_the_file_matches_by_prompt_and_model(tmp_path: Path) -> None:
    config = calibrated_config(tmp_path)
    newer = "2026-12-02T00:00:00.000Z"
    write_records(tmp_path / "runs" / "cal.json", record(index=3, kappa=0.2), record(index=7, created=newer))
    found = (load_config(config).calibration or {})["hooks.Stop[0]"]
    assert found.status == "ok" and found.measured_at == newer  # the hook moved: the newest record
    write_records(tmp_path / "runs" / "cal.json", record(index=0, kappa=0.2), record(index=7, created=newer))
    assert (load_config(config).calibration or {})["hooks.Stop[0]"].status == "below"  # its own place first


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("not json", "not JSON"),
        ('{"format": 2, "records": []}', "not a calibration file: format: Input should be 1"),
        (
            '{"format": 1, "records": [{"event": "Stop"}]}',
            "not a calibration file: records[0].index: Field required",
        ),
        ("[" * 100_000, "nested too deeply"),
    ],
)
def test_a_damaged_calibration_file_is_missing_with_a_located_reason(
    tmp_path: Path, content: str, problem: str
) -> None:
    config = calibrated_config(tmp_path)
    (tmp_path / "runs" / "cal.json").write_text(content)
    found = (load_config(config).calibration or {})["hooks.Stop[0]"]
    assert found.status == "missing" and problem in found.reason


def test_special_and_huge_calibration_files_are_not_read(tmp_path: Path) -> None:
    config = calibrated_config(tmp_path)
    os.mkfifo(tmp_path / "runs" / "cal.json")  # opening a FIFO for reading would hang
    found = (load_config(config).calibration or {})["hooks.Stop[0]"]
    assert found.status == "missing" and "not a regular file" in found.reason
    (tmp_path / "runs" / "cal.json").unlink()
    with (tmp_path / "runs" / "cal.json").open("wb") as big:
        big.truncate(MAX_CALIBRATION_BYTES + 1)
    found = (load_config(config).calibration or {})["hooks.Stop[0]"]
    assert found.status == "missing" and "larger than" in found.reason


@pytest.mark.parametrize(
    ("block", "problem"),
    [
        ({}, "hooks.Stop[0].calibration.file: Field required"),
        (
            {"file": " "},
            "hooks.Stop[0].calibration.file: must name a file (e.g. runs/smoke/calibration.json)",
        ),
        (
            {"file": "c.json", "minKappa": 2},
            "hooks.Stop[0].calibration.minKappa: Input should be less than or equal to 1",
        ),
        (
            {"file": "c.json", "minCases": 0},
            "hooks.Stop[0].calibration.minCases: Input should be greater than or equal to 1",
        ),
        (
            {"file": "c.json", "minCases": 2.5},
            "hooks.Stop[0].calibration.minCases: must be an integer, got 2.5",
        ),
        (
            {"file": "c.json", "minKappa": True},
            "hooks.Stop[0].calibration.minKappa: must be a number, got True",
        ),
        ({"file": "c.json", "floor": 1}, "hooks.Stop[0].calibration.floor: unknown key"),
    ],
)
def test_a_bad_calibration_block_gets_a_located_error(block: dict[str, Any], problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        config_from_data({"hooks": {"Stop": [{"prompt": "x", "calibration": block}]}})
    assert caught.value.problems == [problem]


def test_calibration_is_only_for_prompt_hooks() -> None:
    with pytest.raises(ConfigError) as caught:
        config_from_data(
            {"hooks": {"Stop": [{"type": "command", "command": "true", "calibration": {"file": "c"}}]}}
        )
    assert caught.value.problems == ["hooks.Stop[0].calibration: only for prompt hooks"]


async def test_a_calibrated_hook_nobody_assessed_cannot_enforce() -> None:
    # A Config built in memory and handed to an engine without its calibration being found.
    config = config_from_data({"hooks": {"Stop": [{"prompt": PROMPT, "model": MODEL}]}})
    hook = config.hooks.Stop[0].model_copy(update={"calibration": CalibrationPolicy(file="x.json")})
    bare = config.model_copy(
        update={"hooks": config.hooks.model_copy(update={"Stop": [hook]}), "calibration": {}}
    )
    decision = await Engine(bare).evaluate("Stop", STOP)
    assert decision.decision == "allow"
    assert decision.hooks[0].calibration is not None and decision.hooks[0].calibration.status == "missing"


async def test_an_uncalibrated_pretooluse_hook_never_fails_closed(tmp_path: Path) -> None:
    hook = {
        "prompt": PROMPT,
        "model": "fake:error",
        "matcher": "Bash",
        "failMode": "block",
        "calibration": {"file": "nowhere.json"},
    }
    (tmp_path / "judge.yaml").write_text(json.dumps({"hooks": {"PreToolUse": [hook]}}))
    engine = Engine(load_config(tmp_path / "judge.yaml"))
    decision = await engine.evaluate("PreToolUse", {"tool_name": "Bash", "tool_input": {}})
    assert decision.decision == "allow" and decision.hooks[0].error


@pytest.mark.parametrize("status", ["missing", "stale", "below", "ok"])
def test_judge_run_blocks_only_when_calibrated_and_says_why_on_stderr(
    tmp_path: Path, status: str, capsys: pytest.CaptureFixture[str]
) -> None:
    config = arrange(tmp_path, status)
    context = tmp_path / "stop.json"
    context.write_text(json.dumps(STOP))
    assert main(["run", "--config", str(config), "--event", "Stop", "--context", str(context)]) == 0
    out, err = capsys.readouterr()
    decision = json.loads(out)
    assert decision["decision"] == ("block" if status == "ok" else "allow")
    assert decision["hooks"][0]["calibration"]["status"] == status
    if status != "ok":
        assert f"Stop hook agent[0] ran as shadow: calibration {status}: " in err


def test_validate_warns_about_a_hook_that_cannot_enforce(tmp_path: Path) -> None:
    config = load_config(arrange(tmp_path, "stale"))
    [finding] = [f for f in check_config(config) if f.where.endswith(".calibration")]
    assert finding.severity == "warning" and finding.where == "hooks.Stop[0].calibration"
    assert finding.message.startswith("stale: its prompt changed since runs/cal.json was measured")
    assert not [f for f in check_config(load_config(arrange(tmp_path, "ok"))) if "calibration" in f.where]


def test_an_eval_measures_calibrated_hooks_as_written_and_its_record_then_lets_them_enforce(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = calibrated_config(tmp_path, minCases=2, minKappa=0.5, minBlockPrecision=0.5)
    cases = [
        {"id": f"c{i}", "context": {"final_output": "x"}, "label": label}
        for i, label in enumerate(["block", "block", "block"])
    ]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (tmp_path / "suite.yaml").write_text("config: judge.yaml\ncases: cases.jsonl\n")
    # No record yet: the gate would run the hook as shadow; the eval judges it as written.
    assert main(["eval", str(tmp_path / "suite.yaml"), "--out", str(tmp_path / "runs"), "--quiet"]) == 0
    report = json.loads((tmp_path / "runs" / "report.json").read_text())
    assert report["block"] == 3
    written = json.loads((tmp_path / "runs" / "calibration.json").read_text())
    [rec] = written["records"]
    assert (rec["promptSha256"], rec["model"], rec["cases"]) == (prompt_sha256(PROMPT), MODEL, 3)
    (tmp_path / "runs" / "calibration.json").rename(tmp_path / "runs" / "cal.json")
    found = (load_config(config).calibration or {})["hooks.Stop[0]"]
    # every label was block: kappa is 1 by definition (judge and labels one class, all agree)
    assert found.status == "ok", found.reason
    capsys.readouterr()


def test_a_decision_by_failmode_alone_says_the_hooks_calibration_too(tmp_path: Path) -> None:
    from judge.hooks.gate import fail_mode_decision

    engine = Engine(load_config(arrange(tmp_path, "stale")))
    decision = fail_mode_decision(engine, "Stop", STOP, "state database: connection refused")
    [hook] = decision.to_json()["hooks"]
    assert (hook["mode"], hook["calibration"]["status"]) == ("shadow", "stale")
