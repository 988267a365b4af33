"""``judge copilot`` under the real Copilot CLI (1.0.102), offline against the local model server.

Facts of Copilot CLI 1.0.102 these tests rely on:

* ``COPILOT_OFFLINE=true`` with ``COPILOT_PROVIDER_BASE_URL`` runs without a GitHub login,
  speaking Chat Completions; user hooks in ``$HOME/.copilot/hooks/*.json`` need no trust
  step, a repository's ``.claude/settings.json`` runs only in a trusted folder
  (``--trust-folder``);
* the VS Code compatible (PascalCase) form the installer writes, with ``"version": 1``,
  loads; its input names the event and uses Claude Code's tool names (``bash`` ->
  ``Bash``); every hook gets ``COPILOT_CLI=1``;
* a denied call's result is ``Denied by preToolUse hook: <reason>``; ``additionalContext``
  is appended to the result as ``Additional guidance from postToolUse hooks:``;
  ``modifiedResult`` replaces it; a Stop block's reason is queued as the next user prompt;
* the Stop input carries no text of the answer: it is in ``events.jsonl``
  (``transcript_path``), written before the hook runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from judge.testing import call, say
from tests.realclient.host_clis import COPILOT, find_cli
from tests.realclient.host_harness import JUDGE_MODEL, HostSession

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def copilot() -> Path:
    binary, why = find_cli(COPILOT)
    if binary is None:
        pytest.skip(why)
    return binary


@pytest.fixture
def session(copilot: Path, tmp_path: Path) -> Iterator[HostSession]:
    made = HostSession("copilot", copilot, tmp_path)
    yield made
    made.close()


DENY_RM = (
    "#!/usr/bin/env python3\nimport json, sys\nc = json.load(sys.stdin)\n"
    "command = c['tool_input'].get('command', '')\n"
    "print(json.dumps({'decision': 'block', 'reason': 'POLICY: never rm'} if 'rm ' in command "
    "else {'decision': 'approve'}))\n"
)
WITHHOLD_SECRETS = (
    "#!/usr/bin/env python3\nimport json, sys\nc = json.load(sys.stdin)\n"
    "print(json.dumps({'decision': 'block', 'reason': 'secrets are not shown'} if 'SECRET' in "
    "str(c.get('tool_result')) else {'decision': 'approve'}))\n"
)


def test_copilot_tool_calls_and_stops_are_judged(session: HostSession) -> None:
    """A denied call never runs, a secret in a result is withheld, and the Stop - whose
    input has no answer - is judged on the answer and history read from events.jsonl."""
    stop_hook = {"type": "prompt", "model": f"openai:{JUDGE_MODEL}", "prompt": "Build green? $ARGUMENTS"}
    session.judge_config = {
        "hooks": {
            "PreToolUse": [{"type": "command", "matcher": "Bash", "script": DENY_RM}],
            "PostToolUse": [{"type": "command", "matcher": "Bash", "script": WITHHOLD_SECRETS}],
            "Stop": [stop_hook],
        }
    }
    session.install()
    verdict = '{"ok": false, "reason": "LINKER-ERROR-7 is still in the build log."}'
    judge_replies = [call("GrepSearch", query="LINKER-ERROR", isRegexp=False), say(verdict)]  # then ok
    replies = [
        call("bash", command="rm -rf build", description="clean"),
        call("bash", command="echo SECRET=hunter2", description="env"),
        call("bash", command='echo "LINKER-ERROR-$((3+4)) undefined reference"', description="build"),
        say("Build finished."),
        say("Fixed the linker error."),
    ]
    session.work.joinpath("build").mkdir()
    result = session.run("build it", replies, judge_replies=judge_replies)
    assert result.returncode == 0, result.explain()
    assert session.work.joinpath("build").is_dir()  # the rm never ran
    agent = result.agent_requests
    assert agent[1].tool_results[-1] == "Denied by preToolUse hook: POLICY: never rm", result.explain()
    withheld = agent[2].tool_results[-1]
    assert "hunter2" not in withheld and "[Hook Blocked Tool Result] secrets are not shown" in withheld
    judged = result.judge_requests
    assert "Build finished." in judged[0].text  # the answer, read from events.jsonl
    assert "LINKER-ERROR-7 undefined reference" in judged[1].text  # the grep found it there
    assert "LINKER-ERROR-7 is still in the build log." in json.dumps(agent[4].messages[-1])
    assert len(agent) == 5, result.explain()


COUNT_STOPS = '#!/bin/bash\ncat > /dev/null\necho x >> {marker}\necho \'{{"decision": "approve"}}\'\n'


def _claude_code_install(session: HostSession, config: dict[str, object]) -> None:
    path = session.root / "claude-judge.yaml"
    path.write_text(yaml.safe_dump(config))
    done = subprocess.run(
        [sys.executable, "-m", "judge", "claude-code", "install", "--config", str(path)],
        cwd=session.work,
        env=session.base_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_judge_claude_code_entries_that_copilot_runs_are_answered_in_copilots_dialect_and_once(
    session: HostSession,
) -> None:
    """Copilot runs a trusted repository's .claude/settings.json: ``judge claude-code``
    serves it as ``judge copilot`` would - and steps aside once ``judge copilot`` is
    registered, so each Stop is judged once."""
    claude_marker, copilot_marker = session.shared / "claude-stops", session.shared / "copilot-stops"
    stop = {"type": "command", "script": COUNT_STOPS.format(marker=claude_marker)}
    deny = {"type": "command", "matcher": "Bash", "script": DENY_RM}
    _claude_code_install(session, {"hooks": {"Stop": [stop], "PreToolUse": [deny]}})
    session.env["COPILOT_ALLOW_ALL"] = "true"  # a trusted folder: Copilot reads .claude/settings.json
    session.work.joinpath("build").mkdir()
    clean = call("bash", command="rm -rf build", description="clean")
    result = session.run("clean", [clean, say("Cleaned.")])
    assert result.returncode == 0, result.explain()
    assert session.work.joinpath("build").is_dir(), result.explain()  # denied in Copilot's dialect
    assert result.agent_requests[1].tool_results[-1] == "Denied by preToolUse hook: POLICY: never rm"
    assert claude_marker.read_text() == "x\n"

    counted = {"type": "command", "script": COUNT_STOPS.format(marker=copilot_marker)}
    session.judge_config = {"hooks": {"Stop": [counted]}}
    session.install()
    result = session.run("again", [say("Again.")])
    assert result.returncode == 0, result.explain()
    assert copilot_marker.read_text() == "x\n" and claude_marker.read_text() == "x\n", result.explain()
