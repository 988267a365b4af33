"""``judge codex`` under the real Codex CLI (0.171.0), registered by ``judge codex install``.

Facts of Codex 0.171 these tests rely on (probed with raw command hooks first):

* a hook runs only with a trust record in ``config.toml`` (else it is skipped without a
  word); the installer writes them;
* shell calls reach hooks as ``tool_name: "Bash"`` with ``tool_input.command``; a denied
  call's output is ``Command blocked by PreToolUse hook: <reason>. Command: <cmd>``;
* a Stop block's reason reaches the model as a user message
  ``<hook_prompt hook_run_id=...>REASON</hook_prompt>``; Codex sets no cap on them;
* the model speaks the Responses API (``POST /v1/responses``, streamed).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from judge.integrations.hosts.trust import trusted_hash
from judge.testing import call, say
from tests.realclient.host_clis import CODEX, find_cli
from tests.realclient.host_harness import JUDGE_MODEL, HostSession

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def codex() -> Path:
    binary, why = find_cli(CODEX)
    if binary is None:
        pytest.skip(why)
    return binary


@pytest.fixture
def session(codex: Path, tmp_path: Path) -> Iterator[HostSession]:
    made = HostSession("codex", codex, tmp_path)
    yield made
    made.close()


DENY_RM = (
    "#!/usr/bin/env python3\nimport json, sys\nc = json.load(sys.stdin)\n"
    "command = c['tool_input'].get('command', '')\n"
    "print(json.dumps({'decision': 'block', 'reason': 'POLICY: never rm'} if 'rm ' in command "
    "else {'decision': 'approve'}))\n"
)


ADD_CONTEXT = (
    '#!/bin/bash\necho \'{"decision": "approve", "hookSpecificOutput": '
    '{"additionalContext": "POLICY NOTE: check the exit code"}}\'\n'
)


def test_codex_tool_calls_and_stops_are_judged(session: HostSession) -> None:
    """The whole path: a denied shell call never runs, the Stop is judged by a model that
    greps Codex's rollout (rendered for it), its reason sends the agent back, and the
    second answer is approved."""
    stop_hook = {"type": "prompt", "model": f"openai:{JUDGE_MODEL}", "prompt": "Build green? $ARGUMENTS"}
    session.judge_config = {
        "hooks": {
            "PreToolUse": [{"type": "command", "matcher": "Bash", "script": DENY_RM}],
            "PostToolUse": [{"type": "command", "matcher": "Bash", "script": ADD_CONTEXT}],
            "Stop": [stop_hook],
        }
    }
    session.install()
    verdict = '{"ok": false, "reason": "LINKER-ERROR-7 is still in the build log."}'
    judge_replies = [call("GrepSearch", query="LINKER-ERROR", isRegexp=False), say(verdict)]  # then ok
    replies = [
        call("exec_command", cmd="rm -rf build"),
        call("exec_command", cmd='echo "LINKER-ERROR-$((3+4)) undefined reference"'),
        say("Build finished."),
        say("Fixed the linker error."),
    ]
    session.work.joinpath("build").mkdir()
    result = session.run("build it", replies, judge_replies=judge_replies)
    assert result.returncode == 0, result.explain()
    assert session.work.joinpath("build").is_dir()  # the rm never ran
    agent = result.agent_requests
    assert any("POLICY: never rm" in text for text in agent[1].tool_results), result.explain()
    assert "POLICY NOTE: check the exit code" in json.dumps(agent[2].messages)  # a developer message
    judged = result.judge_requests
    assert "LINKER-ERROR-7 undefined reference" in judged[1].text, result.explain()  # grep found it
    sent_back = json.dumps(agent[3].messages[-1])
    assert "<hook_prompt" in sent_back and "LINKER-ERROR-7 is still in the build log." in sent_back
    assert len(agent) == 4 and "Fixed the linker error." in result.stdout


def test_an_always_blocking_stop_hook_is_capped_by_judge_since_codex_has_no_cap(session: HostSession) -> None:
    """Codex honours any number of Stop blocks in a row, and maxRejections does not bound a
    command hook: judge's own cap lets the agent stop (the note goes to Codex as a
    systemMessage, which ``codex exec`` does not print)."""
    block = '#!/bin/bash\necho \'{"decision": "block", "reason": "KEEP GOING"}\'\n'
    session.judge_config = {"hooks": {"Stop": [{"type": "command", "script": block}]}}
    session.env["JUDGE_STOP_BLOCK_CAP"] = "2"
    session.install()
    result = session.run("work", [say("one"), say("two"), say("three"), say("four")])
    assert result.returncode == 0, result.explain()
    agent = result.agent_requests
    assert len(agent) == 3, result.explain()  # the answer, then 2 continuations; the third stop let through
    assert "KEEP GOING" in json.dumps(agent[2].messages[-1])
    assert "three" in result.stdout and "four" not in result.stdout


def test_uninstalling_judge_keeps_the_users_own_hooks_trusted(session: HostSession) -> None:
    """Trust records are keyed by position: removing judge's Stop group moves the user's
    group behind it, and its record moves with it - Codex still runs the user's hook."""
    marker = session.shared / "user-hook-ran"
    session.judge_config = {"hooks": {"Stop": [{"type": "prompt", "model": "fake:allow", "prompt": "ok?"}]}}
    session.install()
    hooks_file = session.codex_home / "hooks.json"
    document = json.loads(hooks_file.read_text())
    mine = {"type": "command", "command": f"touch {marker}", "timeout": 30}
    document["hooks"]["Stop"].append({"hooks": [mine]})  # the user adds a hook and approves it
    hooks_file.write_text(json.dumps(document))
    config = session.codex_home / "config.toml"
    approved = trusted_hash("Stop", None, mine)
    record = f'\n[hooks.state."{hooks_file}:stop:1:0"]\nenabled = true\ntrusted_hash = "{approved}"\n'
    config.write_text(config.read_text() + record)

    session.install("--uninstall")
    assert json.loads(hooks_file.read_text())["hooks"]["Stop"] == [{"hooks": [mine]}]
    assert f'"{hooks_file}:stop:0:0"' in config.read_text() and ":stop:1:0" not in config.read_text()
    result = session.run("work", [say("done")])
    assert result.returncode == 0, result.explain()
    assert marker.exists(), result.explain()
