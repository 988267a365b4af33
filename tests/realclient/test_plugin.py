"""judge as a Claude Code plugin (``.claude-plugin/``, ``hooks/hooks.json``, ``plugin/``),
checked with the real CLI: ``claude plugin validate`` passes on the repository (a
one-plugin marketplace), and a headless session with the plugin loaded (``--plugin-dir``)
judges a Stop against the scripted model, with the configuration and the sensitive API key
taken from the plugin's options.

The session points the plugin at the judge already installed for the tests
(``JUDGE_PLUGIN_PYTHON``, as docs/claude-code.md describes) instead of building its
virtual environment, which would need the package index.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import judge
from judge.testing import LLMRequest, Reply, call, say
from tests.realclient.harness import JUDGE_MODEL, ClaudeSession, hook_notes
from tests.residents import stop_residents

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
KEY = "sk-ant-judge-plugin-key"
REASON = "Run the tests first."


def test_the_repository_is_a_valid_one_plugin_marketplace(claude_binary: Path, tmp_path: Path) -> None:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "DISABLE_AUTOUPDATER": "1"}
    for target in (REPO, REPO / ".claude-plugin" / "plugin.json"):
        done = subprocess.run(
            [str(claude_binary), "plugin", "validate", str(target)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Validation passed" in done.stdout
    manifest = json.loads((REPO / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["version"] == judge.__version__
    assert manifest["userConfig"]["api_key"]["sensitive"] is True


def test_a_session_with_the_plugin_loaded_judges_a_stop(session: ClaudeSession) -> None:
    hook = {
        "type": "prompt",
        "model": f"anthropic:{JUDGE_MODEL}",
        "maxRejections": 2,
        "prompt": "Judge $ARGUMENTS",
    }
    session.judge_config = {"hooks": {"Stop": [hook]}}
    runtime = tempfile.mkdtemp(prefix="judge-rt-")  # (a short path: the resident's socket lives there)
    session.env = {"JUDGE_PLUGIN_PYTHON": sys.executable, "JUDGE_RUNTIME_DIR": runtime}
    options = {"config": str(session.config_path), "provider": "anthropic", "api_key": KEY}
    settings = {"pluginConfigs": {"judge@inline": {"options": options}}}
    verdicts = [json.dumps({"ok": False, "reason": REASON}), '{"ok": true}']

    def judge_model(request: LLMRequest) -> Reply:
        if request.body.get("tool_choice", {}).get("type") == "any":  # it reads the transcript first
            return call("GrepSearch", query="Fixed", isRegexp=False)
        return say(verdicts.pop(0) if verdicts else '{"ok": true}')

    try:
        result = session.run(
            "fix the bug",
            [say("Fixed, I think.")],
            settings=settings,
            extra_args=("--plugin-dir", str(REPO)),
            judge_handler=judge_model,
        )
    finally:
        stop_residents(runtime)
        shutil.rmtree(runtime, ignore_errors=True)
    assert result.returncode == 0, result.explain()
    starts = [
        e
        for e in result.events
        if e.get("subtype") == "hook_response" and e.get("hook_event") == "SessionStart"
    ]
    assert starts and all(e.get("outcome") == "success" for e in starts), result.explain()
    agent = result.agent_requests
    assert len(agent) == 2, result.explain()  # sent back once, then the judge allowed the stop
    assert REASON in hook_notes(agent[1])
    judged = [r for r in result.requests if r.model == JUDGE_MODEL]
    keys = {
        r.headers.get("x-api-key") or r.headers.get("authorization", "").removeprefix("Bearer ")
        for r in judged
    }
    assert keys == {KEY}  # the sensitive option, not Claude Code's own key
    data = session.home / ".claude" / "plugins" / "data" / "judge-inline"
    assert (data / "python").read_text().strip() == sys.executable
