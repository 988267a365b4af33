"""The offline agent-loop example runs end to end in one command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agent_loop.py"


def test_agent_loop_example_runs_offline() -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    proc = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    # The free-tier denial came back as a synthetic tool_result and the conversation went on.
    assert "prepare_case_file" in out and "-> BLOCKED: free-tier users cannot call prepare_case_file" in out
    assert "hook context: Cite the FAQ article id" in out
    # The Stop gate sent the first answer back, then let the fixed one through.
    assert "continue — End your response with 'Task complete.'" in out
    assert out.strip().splitlines()[-2].startswith("FINAL ANSWER:")
    assert out.strip().splitlines()[-2].endswith("Task complete.")
    assert "1 tool call(s) recorded; session summaries: 2 Stop decision(s)" in out
