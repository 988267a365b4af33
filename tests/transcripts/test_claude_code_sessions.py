"""`judge claude-code` on every real Claude Code file in ../shared/datasets/claude-code/.

Each test runs the adapter as a subprocess with a command hook that captures the context
it was given (and a copy of the rendered transcript) and blocks, so the Claude Code
output, the chosen final answer and the rendered transcript can all be checked. Expected
values are read from the JSONL files themselves, not hard-coded.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

DATASET = Path(__file__).resolve().parents[2].parent / "shared" / "datasets" / "claude-code"
SKIP = pytest.mark.skip(reason=f"dataset folder {DATASET} is absent")
FILES = sorted(p.name for p in DATASET.iterdir() if p.suffix != ".md") if DATASET.is_dir() else []
TRANSCRIPTS: list[Any] = [n for n in FILES if n.endswith(".jsonl")] or [pytest.param(None, marks=SKIP)]
STOP_INPUTS: list[Any] = [n for n in FILES if n.startswith("stop-input-")] or [pytest.param(None, marks=SKIP)]

CAPTURE_SCRIPT = """#!/usr/bin/env python3
import json, shutil, sys
ctx = json.load(sys.stdin)
out = {out!r}
with open(out + "/context.json", "w") as f:
    json.dump(ctx, f)
if ctx.get("execution_summary"):
    shutil.copy(ctx["execution_summary"], out + "/rendered.txt")
print(json.dumps({{"decision": "block", "reason": "captured " + ctx["hook_event_name"]}}))
"""


def write_capture_config(tmp_path: Path) -> Path:
    # The hook writes here whoever it runs as (nobody when the tests run as root).
    out = Path(tempfile.mkdtemp(prefix="captured-"))
    out.chmod(0o777)
    atexit.register(shutil.rmtree, out, True)
    (tmp_path / "captured").symlink_to(out)
    script = CAPTURE_SCRIPT.format(out=str(out))
    config = {"hooks": {"Stop": [{"type": "command", "script": script}]}}
    config["hooks"]["SubagentStop"] = config["hooks"]["Stop"]
    path = tmp_path / "judge.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def run_adapter(tmp_path: Path, config: Path, payload: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["JUDGE_STATE"] = str(tmp_path / "state.sqlite")
    env.pop("JUDGE_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "judge", "claude-code", "--config", str(config)],
        input=payload,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def expectations(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A known user line, a known tool name and the last assistant text block of a transcript."""
    user_line = None
    tool = None
    last_text = None
    for row in rows:
        message = row.get("message")
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        plain_user = row.get("type") == "user" and not row.get("isMeta") and not row.get("isCompactSummary")
        if plain_user and user_line is None and isinstance(content, str) and content.strip():
            user_line = content.strip().split("\n")[0][:100]
        if row.get("type") == "assistant" and isinstance(content, list):
            for block in content:
                if block.get("type") == "tool_use" and tool is None:
                    tool = block["name"]
                if block.get("type") == "text" and block.get("text", "").strip():
                    last_text = block["text"]
    return {"user_line": user_line, "tool": tool, "last_text": last_text}


def test_listing_has_only_known_kinds() -> None:
    if not FILES:
        pytest.skip(f"dataset folder {DATASET} is absent")
    unknown = [n for n in FILES if not (n.endswith(".jsonl") or n.startswith("stop-input-"))]
    assert unknown == [], f"new dataset files need a test: {unknown}"


@pytest.mark.parametrize("name", TRANSCRIPTS)
def test_stop_on_real_transcript(tmp_path: Path, name: str) -> None:
    path = DATASET / name
    rows = read_jsonl(path)
    expected = expectations(rows)
    assert expected["user_line"] and expected["tool"] and expected["last_text"]
    session = next(r["sessionId"] for r in rows if r.get("sessionId"))
    payload = {
        "session_id": session,
        "transcript_path": str(path),
        "cwd": str(tmp_path),
        "hook_event_name": "Stop",
        "stop_hook_active": False,
    }
    proc = run_adapter(tmp_path, write_capture_config(tmp_path), json.dumps(payload))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"decision": "block", "reason": "captured Stop"}

    ctx = json.loads((tmp_path / "captured" / "context.json").read_text(encoding="utf-8"))
    # No last_assistant_message: the final answer is the transcript's last assistant text.
    assert ctx["final_output"].endswith(expected["last_text"])
    assert ctx["session_id"] == session
    rendered = (tmp_path / "captured" / "rendered.txt").read_text(encoding="utf-8")
    assert f"TOOL CALL {expected['tool']}" in rendered
    user_lines = [line for line in rendered.splitlines() if expected["user_line"] in line]
    assert user_lines and "USER" in user_lines[0].split(":", 1)[0]
    assert not any(line.startswith("{") for line in rendered.splitlines()), "raw JSON leaked"
    # The rendered transcript is kept, owner-only, in the render cache beside the state file,
    # so the next Stop of this session renders only what Claude Code appended. (A hook that
    # runs as another user, under root, is given its own copy of it instead.)
    cached = sorted((tmp_path / "render-cache").glob("*.txt"))
    assert len(cached) == 1
    summary = cached[0]
    if os.geteuid() != 0:
        assert Path(ctx["execution_summary"]) == summary
    assert summary.stat().st_mode & 0o777 == 0o600
    assert summary.read_text(encoding="utf-8") == rendered


@pytest.mark.parametrize("name", STOP_INPUTS)
def test_real_stop_inputs(tmp_path: Path, name: str) -> None:
    raw = (DATASET / name).read_text(encoding="utf-8")
    payload = json.loads(raw)
    proc = run_adapter(tmp_path, write_capture_config(tmp_path), raw)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"decision": "block", "reason": "captured Stop"}
    ctx = json.loads((tmp_path / "captured" / "context.json").read_text(encoding="utf-8"))
    assert ctx["final_output"] == payload.get("last_assistant_message", "")
    assert ctx["session_id"] == payload["session_id"]
    assert ctx.get("permission_mode") == payload.get("permission_mode")
    # Their transcripts are not public: the hook gets no execution_summary.
    assert "execution_summary" not in ctx


def test_last_assistant_message_wins_over_lagging_file(tmp_path: Path) -> None:
    if not FILES:
        pytest.skip(f"dataset folder {DATASET} is absent")
    path = DATASET / "long-session-compaction-stop-hook-v2.1.39.jsonl"
    latest = "All 354 tests pass; the channel work is merged."
    payload = {
        "session_id": "lag-1",
        "transcript_path": str(path),
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "last_assistant_message": latest,
    }
    proc = run_adapter(tmp_path, write_capture_config(tmp_path), json.dumps(payload))
    assert proc.returncode == 0, proc.stderr
    ctx = json.loads((tmp_path / "captured" / "context.json").read_text(encoding="utf-8"))
    assert ctx["final_output"] == latest
    assert expectations(read_jsonl(path))["last_text"] not in ctx["final_output"]


def test_subagent_stop_renders_the_subagent_transcript(tmp_path: Path) -> None:
    main = DATASET / "small-websearch-via-subagent-v2.1.14.jsonl"
    sub = DATASET / "small-websearch-via-subagent-v2.1.14.subagent-a2018e5.jsonl"
    if not (main.is_file() and sub.is_file()):
        pytest.skip(f"dataset files absent in {DATASET}")
    payload = {
        "session_id": "4b2030ed-5563-49ea-b703-6a002f2d3cc8",
        "transcript_path": str(main),
        "agent_transcript_path": str(sub),
        "agent_id": "a2018e5",
        "agent_type": "general-purpose",
        "hook_event_name": "SubagentStop",
        "stop_hook_active": False,
    }
    proc = run_adapter(tmp_path, write_capture_config(tmp_path), json.dumps(payload))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"decision": "block", "reason": "captured SubagentStop"}
    ctx = json.loads((tmp_path / "captured" / "context.json").read_text(encoding="utf-8"))
    assert ctx["final_output"].endswith(expectations(read_jsonl(sub))["last_text"])
    assert ctx["agent_name"] == "general-purpose"
    rendered = (tmp_path / "captured" / "rendered.txt").read_text(encoding="utf-8")
    assert "[subagent a2018e5] TOOL CALL WebSearch" in rendered
    assert "TOOL CALL Task" not in rendered  # the main session's call is not in the subagent's file
