"""``type: "http"`` hooks under the real Claude Code CLI, posting to ``judge serve``.

``judge claude-code install --http URL`` writes http entries for the events whose judge
hooks fail open and command entries for the rest: Claude Code lets a stop or a tool call
through when an http hook fails (checked with 2.1.332: a refused connection, a 500, a
timeout), so a PreToolUse policy must not depend on the service being up. These tests run
a session against a live service (its Stop rounds counted there, the token passed through
``allowedEnvVars``), then the same session with the service gone: the Stop goes through
with Claude Code's error notice, the PreToolUse command entry still denies.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from judge.testing import say
from tests.realclient.harness import ClaudeSession, hook_notes, tool
from tests.service.test_service import Service

pytestmark = pytest.mark.slow

TOKEN = "http-hooks-token"
REASON = "Run the tests before you stop."


def installed(session: ClaudeSession, url: str) -> dict[str, Any]:
    """``judge claude-code install --http URL`` in the project, as a user runs it."""
    session.config_path.write_text(yaml.safe_dump(session.judge_config))
    flags = ["--config", str(session.config_path), "--http", url, "--no-resident"]
    done = subprocess.run(
        [sys.executable, "-m", "judge", "claude-code", "install", *flags],
        cwd=session.project,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    settings: dict[str, Any] = json.loads((session.project / ".claude" / "settings.json").read_text())
    return settings


def test_stop_goes_over_http_and_pretooluse_stays_a_command_that_fails_closed(
    session: ClaudeSession, tmp_path: Path
) -> None:
    stop = {
        "type": "prompt",
        "model": f"fake:block:{REASON}",
        "maxRejections": 2,
        "repeats": 2,  # the scripted agent gives one answer every time
        "prompt": "Judge $ARGUMENTS",
    }
    deny = {
        "type": "command",
        "matcher": "Bash",
        "command": "grep -q 'rm ' && { echo 'no rm' >&2; exit 2; }; exit 0",
    }
    session.judge_config = {"hooks": {"Stop": [stop], "PreToolUse": [deny]}}
    session.config_path.write_text(yaml.safe_dump(session.judge_config))
    service = Service(
        tmp_path, ["--config", str(session.config_path), "--data-dir", str(tmp_path / "served")]
    )
    service.env = {"JUDGE_API_TOKEN": TOKEN}
    service.start()
    try:
        settings = installed(session, f"http://127.0.0.1:{service.port}")
        hooks = settings["hooks"]
        assert [h["type"] for h in hooks["Stop"][0]["hooks"]] == ["http"]
        assert [h["type"] for h in hooks["PreToolUse"][0]["hooks"]] == ["command"]
        session.env = {"JUDGE_API_TOKEN": TOKEN}
        result = session.run("fix the bug", [say("Fixed, I think.")], settings=settings)
        assert result.returncode == 0, result.explain()
        requests = result.agent_requests
        assert len(requests) == 2, result.explain()  # sent back once, then forced
        assert REASON in hook_notes(requests[1])
        assert "Stop forced: allowed after 2 rejection(s)" in result.stdout
        served = [json.loads(line) for line in service.text().splitlines() if line.startswith("{")]
        posts = [r for r in served if r.get("path") == "/api/v2/claude-code"]
        assert [r["status"] for r in posts] == [200, 200], service.text()[-2000:]  # the token went through
    finally:
        service.stop()
    # The service is gone: the http Stop fails (Claude Code lets the stop through and says
    # so), the PreToolUse command entry still judges in process and denies.
    result = session.run(
        "clean up", [tool("Bash", "t1", command="rm -f notes.txt"), say("Cleaned.")], settings=settings
    )
    assert result.returncode == 0, result.explain()
    feedback = json.dumps([m for r in result.agent_requests for m in r.messages])
    assert "no rm" in feedback, result.explain()
    assert "stop-hook-error" in result.stdout or "stop hook" in result.stdout.lower()
