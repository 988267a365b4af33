"""``judge gemini`` under the real Gemini CLI (0.61.0), its model answering from ``--fake-responses``.

Facts of Gemini CLI 0.61 these tests rely on:

* hooks live in ``~/.gemini/settings.json`` beside the other settings (auth, model), with
  ``timeout`` in milliseconds; ``gemini -p`` in yolo mode offers ``run_shell_command``;
* a BeforeTool denial reaches the model as ``Tool execution blocked: <reason>``; an
  AfterTool ``additionalContext`` is appended to the result in ``<hook_context>`` tags; an
  AfterAgent block sends the reason as the next user message - all of it recorded in the
  chat log ``~/.gemini/tmp/<project>/chats/session-*.jsonl``;
* AfterAgent's ``prompt_response`` is cumulative on retries (judge judges the log's last
  answer); Gemini refuses shell commands with ``$(...)`` by itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from judge.testing import call, say
from tests.realclient.host_clis import GEMINI, find_cli
from tests.realclient.host_harness import JUDGE_MODEL, HostSession

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def gemini() -> Path:
    binary, why = find_cli(GEMINI)
    if binary is None:
        pytest.skip(why)
    return binary


@pytest.fixture
def session(gemini: Path, tmp_path: Path) -> Iterator[HostSession]:
    made = HostSession("gemini", gemini, tmp_path)
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


def chat_log(session: HostSession) -> str:
    (log,) = (session.home / ".gemini" / "tmp").rglob("chats/*.jsonl")
    return log.read_text()


def test_gemini_tool_calls_and_stops_are_judged(session: HostSession) -> None:
    """A denied call never runs, judge's context follows a result, and AfterAgent is judged
    by a model that greps Gemini's chat log; its reason is the agent's next prompt, and the
    retry is judged on its own answer."""
    stop_hook = {"type": "prompt", "model": f"openai:{JUDGE_MODEL}", "prompt": "Build green? $ARGUMENTS"}
    session.judge_config = {
        "hooks": {
            "PreToolUse": [{"type": "command", "matcher": "run_shell_command", "script": DENY_RM}],
            "PostToolUse": [{"type": "command", "matcher": "run_shell_command", "script": ADD_CONTEXT}],
            "Stop": [stop_hook],
        }
    }
    session.install()
    settings = json.loads((session.home / ".gemini" / "settings.json").read_text())
    assert settings["security"] == {"auth": {"selectedType": "gemini-api-key"}}  # kept
    verdict = '{"ok": false, "reason": "LINKER-ERROR-7 is still in the build log."}'
    judge_replies = [call("GrepSearch", query="LINKER-ERROR", isRegexp=False), say(verdict)]  # then ok
    replies = [
        call("run_shell_command", command="rm -rf build"),
        call("run_shell_command", command='echo "LINKER-ERROR-7 undefined reference"'),
        say("Build finished."),
        say("Fixed the linker error."),
    ]
    session.work.joinpath("build").mkdir()
    result = session.run("build it", replies, judge_replies=judge_replies)
    assert result.returncode == 0, result.explain()
    assert session.work.joinpath("build").is_dir(), result.explain()  # the rm never ran
    log = chat_log(session)
    assert "Tool execution blocked: POLICY: never rm" in log
    assert "<hook_context>POLICY NOTE: check the exit code</hook_context>" in log
    assert '"text":"LINKER-ERROR-7 is still in the build log."' in log.replace(": ", ":")
    judged = result.judge_requests
    assert "LINKER-ERROR-7 undefined reference" in judged[1].text, result.explain()  # grep found it
    contexts = [r.messages[1]["content"] for r in judged if len(r.messages) == 2]
    assert '"final_output": "Build finished."' in contexts[0]
    assert '"final_output": "Fixed the linker error."' in contexts[1]  # not both answers
    assert "Fixed the linker error." in result.stdout


def test_uninstall_leaves_geminis_settings_as_they_were(session: HostSession) -> None:
    settings = session.home / ".gemini" / "settings.json"
    before = json.loads(settings.read_text())
    session.judge_config = {"hooks": {"Stop": [{"type": "prompt", "model": "fake:allow", "prompt": "ok?"}]}}
    session.install()
    assert "AfterAgent" in json.loads(settings.read_text())["hooks"]
    session.install("--uninstall")
    assert json.loads(settings.read_text()) == before
