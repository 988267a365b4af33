"""`judge claude-code` enforces a calibrated hook only while its record is `ok`, and a session
keeps the calibration it started with: an agent that deletes or edits calibration.json
cannot switch its own judge to shadow (calibration can only ever weaken a hook)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.claude_code.test_fail_closed import claude_code
from tests.hooks.test_calibration import MODEL, PROMPT, record, write_records


def config_text(file: str = "runs/cal.json") -> str:
    hook = {
        "type": "prompt",
        "model": MODEL,
        "prompt": PROMPT,
        "maxRejections": 5,
        "calibration": {"file": file},
    }
    return json.dumps({"hooks": {"Stop": [hook]}})


def stop(session: str = "s1") -> dict[str, Any]:
    return {"hook_event_name": "Stop", "session_id": session, "stop_hook_active": False}


def start(session: str) -> dict[str, Any]:
    return {"hook_event_name": "SessionStart", "session_id": session, "source": "startup"}


def cal(tmp_path: Path) -> Path:
    (tmp_path / "runs").mkdir(exist_ok=True)
    return tmp_path / "runs" / "cal.json"


@pytest.mark.parametrize(
    ("status", "records"),
    [
        ("missing", None),
        ("stale", [record(prompt="an older prompt")]),
        ("below", [record(cases=3)]),
        ("ok", [record()]),
    ],
)
def test_only_an_ok_calibration_blocks_under_claude_code(
    tmp_path: Path, status: str, records: list[dict[str, Any]] | None
) -> None:
    if records is not None:
        write_records(cal(tmp_path), *records)
    out, _ = claude_code(tmp_path, config_text(), stop())
    if status == "ok":
        assert out["decision"] == "block" and out["reason"] == "Run the tests."
    else:
        assert out is None  # an allowed Stop: nothing to say to Claude Code


def test_a_session_keeps_its_calibration_when_the_agent_deletes_or_edits_the_file(tmp_path: Path) -> None:
    write_records(cal(tmp_path), record())
    out, _ = claude_code(tmp_path, config_text(), stop())
    assert out["decision"] == "block"
    # The agent deletes the record that lets its judge block: its session is still judged.
    cal(tmp_path).unlink()
    out, _ = claude_code(tmp_path, config_text(), stop())
    assert out["decision"] == "block"
    assert "(or a calibration file it names) became unreadable" not in out.get("systemMessage", "")
    assert "changed during this session" in out["systemMessage"]
    assert "calibration file" in out["systemMessage"]
    # ... or rewrites it below the floors: still the calibration the session started with.
    write_records(cal(tmp_path), record(kappa=0.0))
    out, _ = claude_code(tmp_path, config_text(), stop())
    assert out["decision"] == "block"
    # A new session is judged by the file as it is now: below its floors, shadow.
    out, _ = claude_code(tmp_path, config_text(), stop("s2"))
    assert out is None


def call(tmp_path: Path, payload: dict[str, Any]) -> Any:
    """The adapter on judge.yaml as it is (not rewritten: the fast path's index stays valid)."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("JUDGE_")}
    env.pop("CLAUDE_PID", None)
    env["JUDGE_STATE"] = str(tmp_path / "state" / "state.sqlite")
    args = [sys.executable, "-m", "judge", "claude-code", "--config", str(tmp_path / "judge.yaml")]
    proc = subprocess.run(
        args, input=json.dumps(payload), capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout) if proc.stdout.strip() else None


def copies(tmp_path: Path) -> int:
    """Configurations kept for pinning: only the full adapter writes them."""
    return len(list((tmp_path / "state" / "config-pins").glob("*.conf")))


def test_a_session_pinned_at_session_start_by_the_fast_path_keeps_its_calibration(tmp_path: Path) -> None:
    write_records(cal(tmp_path), record())
    claude_code(tmp_path, config_text(), stop("warm-up"))  # the full path writes the fast path's index
    kept = copies(tmp_path)
    assert call(tmp_path, start("s3")) is None
    assert copies(tmp_path) == kept  # answered (and pinned) by the fast path
    cal(tmp_path).unlink()
    assert call(tmp_path, stop("s3"))["decision"] == "block"


def test_a_new_calibration_is_not_missed_by_the_fast_path(tmp_path: Path) -> None:
    claude_code(tmp_path, config_text(), stop("warm-up"))  # indexed while there is no record
    write_records(cal(tmp_path), record())  # then the eval writes it
    assert call(tmp_path, start("s4")) is None  # a changed calibration file: the index is stale
    assert call(tmp_path, stop("s4"))["decision"] == "block"


def test_install_says_which_hooks_enforce(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "judge.yaml").write_text(config_text(file="../runs/cal.json"))
    proc = subprocess.run(
        [sys.executable, "-m", "judge", "claude-code", "install", "--dry-run"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "hooks.Stop[0]: calibration missing: runs as shadow: " in proc.stderr


def test_install_keeps_a_calibrated_policys_fail_closed_entry_for_when_its_record_arrives(
    tmp_path: Path,
) -> None:
    hook = {
        "type": "prompt",
        "model": MODEL,
        "prompt": PROMPT,
        "matcher": "Bash",
        "failMode": "block",
        "calibration": {"file": "../runs/cal.json"},  # not measured yet: shadow for now
    }
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "judge.yaml").write_text(json.dumps({"hooks": {"PreToolUse": [hook]}}))
    proc = subprocess.run(
        [sys.executable, "-m", "judge", "claude-code", "install"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    settings = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    [group] = settings["hooks"]["PreToolUse"]
    assert group["hooks"][0]["onFailure"] == "block"
