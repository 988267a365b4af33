"""`judge run` with a prompt hook, as a subprocess, against the local model server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from judge.testing import LLMServer, call, verdict

ROOT = Path(__file__).resolve().parents[2]
CONFIG = """\
hooks:
  Stop:
    - type: prompt
      prompt: |
        Check that the agent's answer is complete.
        $ARGUMENTS
      timeout: 30
"""


def run_judge(tmp_path: Path, env: dict[str, str], final_output: str) -> dict:
    config = tmp_path / "agent.yaml"
    config.write_text(CONFIG)
    transcript = tmp_path / "transcript.txt"
    transcript.write_text("user: deploy and report\nassistant: deploy FAILED\n")
    context = tmp_path / "context.json"
    context.write_text(
        json.dumps(
            {
                "hook_event_name": "Stop",
                "agent_name": "a",
                "current_turn": 2,
                "max_turns": 10,
                "final_output": final_output,
                "execution_summary": str(transcript),
            }
        )
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "JUDGE_"))}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "judge",
            "run",
            "--config",
            str(config),
            "--event",
            "Stop",
            "--context",
            str(context),
        ],
        capture_output=True,
        text=True,
        env={**clean, **env},
        cwd=ROOT,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_judge_run_with_prompt_hook(tmp_path, fmt):
    with LLMServer() as server:
        server.push(call("GrepSearch", query="failed", isRegexp=False), verdict(False, "The deploy failed."))
        out = run_judge(tmp_path, server.env(fmt, model="served"), "Deployed!")
        assert out["decision"] == "block" and out["reason"] == "The deploy failed."
        hook = out["hooks"][0]
        assert hook["model"] == f"{fmt}:served" and hook["usage"]["inputTokens"] > 0
        assert "2: assistant: deploy FAILED" in server.requests[1].tool_results[0]


def test_judge_run_with_fake_model_needs_no_key(tmp_path):
    out = run_judge(tmp_path, {"JUDGE_MODEL_REASONINGFAST": "fake:heuristic"}, "I will deploy next.")
    assert out["decision"] == "block" and "unfinished" in out["reason"]
    assert out["hooks"][0]["model"] == "fake:heuristic"


def test_judge_run_missing_key_applies_fail_mode(tmp_path):
    out = run_judge(tmp_path, {"JUDGE_MODEL_REASONINGFAST": "openai:gpt-x"}, "Done.")
    assert out["decision"] == "allow"
    assert "OPENAI_API_KEY is not set" in out["hooks"][0]["error"]
    assert out["hooks"][0]["model"] == "openai:gpt-x"  # the model it tried, even on failure
