"""``judge <host>`` as the host runs it: the fast path, and ``judge claude-code`` run by other hosts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.hosts import payloads

# Runs the real entry point and reports which heavy modules it imported.
PROBE = (
    "import sys; from judge.cli import main; code = main(sys.argv[1:]); "
    "heavy = sorted(m for m in ('pydantic', 'yaml', 'judge.config', 'judge.hooks.engine', 'asyncio') "
    "if m in sys.modules); print('HEAVY=' + ','.join(heavy), file=sys.stderr); sys.exit(code)"
)
DENY_BASH = """hooks:
  PreToolUse:
    - type: command
      matcher: Bash
      command: 'echo "{\\"decision\\": \\"block\\", \\"reason\\": \\"POLICY\\"}"'
"""


def run(tmp_path: Path, argv: list[str], payload: dict[str, Any], **env: str) -> tuple[str, str, list[str]]:
    environ = {
        k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("COPILOT")
    }
    environ.pop("JUDGE_CONFIG", None)
    environ.pop("CURSOR_VERSION", None)
    environ.update(JUDGE_STATE=str(tmp_path / "state" / "state.sqlite"), HOME=str(tmp_path / "home"), **env)
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=environ,
        cwd=tmp_path,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    heavy = next(x for x in proc.stderr.splitlines() if x.startswith("HEAVY="))[6:]
    return proc.stdout, proc.stderr, [m for m in heavy.split(",") if m]


def test_a_tool_call_no_hook_matches_is_answered_without_loading_the_config(tmp_path: Path) -> None:
    config = tmp_path / "judge.yaml"
    config.write_text(DENY_BASH)
    argv = ["codex", "--config", str(config)]
    denied, _, heavy = run(tmp_path, argv, payloads.codex("PreToolUse", tmp_path))  # writes the index
    assert (
        json.loads(denied)["hookSpecificOutput"]["permissionDecision"] == "deny" and "judge.config" in heavy
    )
    other = payloads.codex("PreToolUse", tmp_path, tool_name="apply_patch")
    assert run(tmp_path, argv, other)[::2] == ("", [])
    assert run(tmp_path, argv, payloads.codex("Stop", tmp_path))[::2] == ("", [])
    native = payloads.copilot_native("preToolUse", tmp_path, toolName="view")
    copilot = ["copilot", "--config", str(config), "--event", "preToolUse"]
    assert run(tmp_path, copilot, native)[::2] == ("", [])
    denied, _, _ = run(tmp_path, argv, payloads.codex("PreToolUse", tmp_path))  # a match still runs
    assert "POLICY" in denied


def test_judge_claude_code_run_by_copilot_answers_in_copilots_dialect(tmp_path: Path) -> None:
    config = tmp_path / "judge.yaml"
    config.write_text(DENY_BASH)
    argv = ["claude-code", "--config", str(config), "--pinned"]
    out, err, _ = run(tmp_path, argv, payloads.copilot("PreToolUse", tmp_path), COPILOT_CLI="1")
    answer = json.loads(out)
    assert (
        answer["permissionDecision"] == "deny"
        and answer["hookSpecificOutput"]["permissionDecision"] == "deny"
    )
    assert "run by Copilot CLI; answered as judge copilot" in err


def test_judge_claude_code_steps_aside_where_judge_copilot_is_registered(tmp_path: Path) -> None:
    config = tmp_path / "judge.yaml"
    config.write_text(DENY_BASH)
    hooks = tmp_path / "home" / ".copilot" / "hooks"
    hooks.mkdir(parents=True)
    command = f"{sys.executable} -m judge copilot --config {config} --timeout 20"
    (hooks / "judge.json").write_text(
        json.dumps(
            {"version": 1, "hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": command}]}]}}
        )
    )
    argv = ["claude-code", "--config", str(config)]
    out, err, _ = run(tmp_path, argv, payloads.copilot("PreToolUse", tmp_path), COPILOT_CLI="1")
    assert out == "" and f"judge copilot in {hooks / 'judge.json'} serves it" in err


def test_judge_claude_code_run_by_cursor_answers_in_cursors_dialect(tmp_path: Path) -> None:
    config = tmp_path / "judge.yaml"
    config.write_text(DENY_BASH.replace("matcher: Bash", "matcher: Shell"))
    out, err, _ = run(
        tmp_path, ["claude-code", "--config", str(config)], payloads.cursor("preToolUse", tmp_path)
    )
    assert json.loads(out) == {"permission": "deny", "user_message": "POLICY", "agent_message": "POLICY"}
    assert "run by Cursor" in err
