"""``judge claude-code``'s fast path: a call no hook can match loads neither config nor engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from judge.integrations.claude_code.fast_path import index_path

# Runs the real entry point and reports which heavy modules it imported.
PROBE = (
    "import sys; from judge.cli import main; code = main(sys.argv[1:]); "
    "heavy = sorted(m for m in ('pydantic', 'yaml', 'judge.config', 'judge.hooks.engine', 'asyncio') "
    "if m in sys.modules); print('HEAVY=' + ','.join(heavy), file=sys.stderr); sys.exit(code)"
)


def call(tmp_path: Path, config: Path, payload: dict[str, Any]) -> tuple[str, list[str]]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["JUDGE_STATE"] = str(tmp_path / "state" / "state.sqlite")
    env.pop("JUDGE_CONFIG", None)
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, "claude-code", "--config", str(config)],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    heavy = next(x for x in proc.stderr.splitlines() if x.startswith("HEAVY="))[6:]
    return proc.stdout, [m for m in heavy.split(",") if m]


def write_config(path: Path, pre_matcher: str, marker: Path, extra: str = "") -> Path:
    path.write_text(
        f"""hooks:
  PreToolUse:
    - type: command
      matcher: "{pre_matcher}"
      command: 'cat > {marker}; echo "{{\\"decision\\": \\"block\\", \\"reason\\": \\"no {pre_matcher}\\"}}"'
{extra}""",
        encoding="utf-8",
    )
    return path


def pre(tool: str, **extra: Any) -> dict[str, Any]:
    return {
        "hook_event_name": "PreToolUse",
        "session_id": "s1",
        "tool_name": tool,
        "tool_input": {"x": 1},
        **extra,
    }


def test_a_call_no_hook_matches_is_answered_without_loading_the_config(
    tmp_path: Path, hook_writable: Path
) -> None:
    marker = hook_writable / "ran.json"  # the hook may run as nobody
    config = write_config(tmp_path / "judge.yaml", "Write|Edit", marker)
    # First call: no index yet, the full adapter runs (and writes the index).
    out, heavy = call(tmp_path, config, pre("Bash"))
    assert out == "" and "judge.config" in heavy
    assert Path(index_path(str(tmp_path / "state" / "state.sqlite"), str(config))).is_file()
    # Later calls that match nothing: no pydantic, no YAML, no engine, no asyncio.
    for event in ("PreToolUse", "Stop", "PostToolUse", "PostToolUseFailure"):
        out, heavy = call(tmp_path, config, {**pre("Bash"), "hook_event_name": event})
        assert (out, heavy) == ("", []), event
    assert not marker.exists()
    # A matching call still runs the hook, with the hook input read by the fast path.
    out, heavy = call(tmp_path, config, pre("Edit"))
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert json.loads(marker.read_text())["tool_input"] == {"x": 1}


def test_an_edited_config_is_loaded_again(tmp_path: Path, hook_writable: Path) -> None:
    marker = hook_writable / "ran.json"  # the hook may run as nobody
    config = write_config(tmp_path / "judge.yaml", "Write", marker)
    call(tmp_path, config, pre("Bash"))
    assert call(tmp_path, config, pre("Bash")) == ("", [])
    before = config.stat().st_mtime_ns
    write_config(config, "Bash", marker)  # same size as before
    os.utime(config, ns=(before + 10**9, before + 10**9))  # a distinct time even on coarse clocks
    out, heavy = call(tmp_path, config, pre("Bash", session_id="s2"))  # a new session: the edit counts
    assert "judge.config" in heavy and json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"


@pytest.mark.parametrize(
    ("matcher", "tool"),
    [
        ("*", "Anything"),  # matches all
        ("mcp__.*", "mcp__db__query"),  # a regex
        ("[Bb]ash", "Bash"),  # not in the simple subset: decided by the full path
    ],
)
def test_matchers_that_select_the_tool_reach_the_full_path(
    tmp_path: Path, hook_writable: Path, matcher: str, tool: str
) -> None:
    marker = hook_writable / "ran.json"  # the hook may run as nobody
    config = write_config(tmp_path / "judge.yaml", matcher, marker)
    call(tmp_path, config, pre("Nothing"))
    _, heavy = call(tmp_path, config, pre(tool))
    assert "judge.config" in heavy and marker.exists()


def test_custom_agent_hooks_count_for_their_agent_only(tmp_path: Path, hook_writable: Path) -> None:
    marker = hook_writable / "ran.json"  # the hook may run as nobody
    extra = f"""customAgents:
  reviewer:
    hooks:
      PreToolUse:
        - type: command
          matcher: Bash
          command: 'touch {marker}'
"""
    config = write_config(tmp_path / "judge.yaml", "Write", tmp_path / "unused", extra)
    call(tmp_path, config, pre("Read"))
    assert call(tmp_path, config, pre("Bash")) == ("", [])
    assert call(tmp_path, config, pre("Bash", agent_type="other")) == ("", [])
    _, heavy = call(tmp_path, config, pre("Bash", agent_type="reviewer"))
    assert "judge.config" in heavy and marker.exists()


def test_a_broken_config_is_never_skipped(tmp_path: Path) -> None:
    config = write_config(tmp_path / "judge.yaml", "Write", tmp_path / "m")
    call(tmp_path, config, pre("Bash"))
    config.write_text("hooks: [not, a, mapping]\n", encoding="utf-8")
    out, heavy = call(tmp_path, config, pre("Bash", session_id="s2"))
    assert "judge.config" in heavy
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"  # fails closed
