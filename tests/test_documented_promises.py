"""Documented behaviours that had no test: the command-hook environment is an allow-list,
StopGate when its hooks or its store fail, the Claude Code adapter with an unwritable
state location, and where `judge eval` keeps its cache by default."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from judge.config import config_from_data
from judge.errors import HookError
from judge.evaluation.cache import CACHE_NAME
from judge.hooks.command import ENV_ALLOWLIST, run_command_hook
from judge.hooks.engine import Engine
from judge.hooks.judging import PromptRequest, PromptVerdict
from judge.integrations import SessionFacts, StopGate
from judge.state import Store
from tests.claude_code.test_adapter import run_adapter, stop_payload
from tests.claude_code.test_adapter import write_config as write_cc_config
from tests.cli.test_eval import run_eval
from tests.evaluation.test_runner import ScriptedJudge, labelled_rows, write_suite
from tests.hooks.test_command import command

# --------------------------------------------------------------------------- sandbox env

#: What the sandbox sets itself, beside the parent's allow-listed variables.
SANDBOX_SET = {"HOME", "TMPDIR", "PYTHONIOENCODING"}


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux /proc")
async def test_the_hook_environment_is_an_allow_list(monkeypatch: pytest.MonkeyPatch) -> None:
    unlisted = {
        "DATABASE_URL": "postgresql://app:pw@db/prod",
        "SENTRY_DSN": "https://key@sentry.example/1",
        "COMPANY_INTERNAL_SETTING": "internal-setting-value-7",  # (not a substring of a temp dir's name)
    }
    for name, value in unlisted.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("TZ", "UTC")  # listed: passed through
    # The environment the hook's process was started with, as the kernel recorded it
    # (a shell or an interpreter shim adds variables of its own later).
    result = await run_command_hook(command("tr '\\0' '\\n' < /proc/$$/environ"), "{}")
    seen = dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)
    assert "PATH" in seen, result
    assert set(seen) <= set(ENV_ALLOWLIST) | SANDBOX_SET, set(seen) - set(ENV_ALLOWLIST) - SANDBOX_SET
    for name, value in unlisted.items():
        assert name not in seen and value not in result.stdout
    assert seen["TZ"] == "UTC"


# --------------------------------------------------------------------------- StopGate


class FailingJudge:
    def __init__(self) -> None:
        self.calls = 0

    async def evaluate(self, request: PromptRequest) -> PromptVerdict:
        self.calls += 1
        raise HookError("OPENAI_API_KEY is not set (needed for openai:gpt-x)")


def stop_config(**hook: object) -> Engine:
    config = config_from_data({"hooks": {"Stop": [{"type": "prompt", "prompt": "Done? $ARGUMENTS", **hook}]}})
    return Engine(config, judge=FailingJudge())


async def test_stop_gate_when_a_hook_fails_its_fail_mode_decides() -> None:
    lenient = await StopGate(stop_config()).check("The answer.")
    assert (lenient.stop, lenient.forced) == (True, False)  # Stop prompt hooks default to allow
    assert lenient.decision.hooks[0].error == "OPENAI_API_KEY is not set (needed for openai:gpt-x)"

    strict_gate = StopGate(stop_config(failMode="block"), SessionFacts(session_id="s"))
    strict = await strict_gate.check("The answer.")
    assert strict.stop is False
    assert strict.reason == "Hook error: OPENAI_API_KEY is not set (needed for openai:gpt-x)"
    assert strict_gate.rejection_count() == 1  # and it counts, so maxRejections still ends the loop


async def test_stop_gate_whose_store_fails_raises_instead_of_allowing(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    store = Store(folder / "state.sqlite")
    engine = stop_config(failMode="block")
    gate = StopGate(engine, SessionFacts(session_id="s"), store=store)
    shutil.rmtree(folder)
    folder.write_text("not a folder any more")  # the database cannot be opened again
    store.close()
    # the session's lock file (next to the database) or the database itself
    with pytest.raises((sqlite3.OperationalError, OSError)):
        await gate.check("The answer.")
    judge = engine.judge
    assert isinstance(judge, FailingJudge) and judge.calls == 0  # nothing judged, nothing allowed


# --------------------------------------------------------------------------- Claude Code adapter


def test_claude_code_adapter_with_an_unwritable_state_location(tmp_path: Path) -> None:
    config = write_cc_config(
        tmp_path,
        {"hooks": {"Stop": [{"type": "prompt", "prompt": "Done? $ARGUMENTS", "model": "fake:block:more"}]}},
    )
    blocker = tmp_path / "state-dir"
    blocker.write_text("a file where the state folder should be")
    proc = run_adapter(
        tmp_path, stop_payload("s-1", False), config, {"JUDGE_STATE": str(blocker / "state.sqlite")}
    )
    assert proc.returncode == 0
    out = json.loads(proc.stdout)
    assert set(out) == {"systemMessage"}  # the stop goes through, and the user is told why
    assert "not checked" in out["systemMessage"] and str(blocker) in out["systemMessage"]
    assert proc.stderr.startswith("judge claude-code: ") and str(blocker) in proc.stderr


# --------------------------------------------------------------------------- eval cache


def test_eval_cache_lives_next_to_the_output_folder_by_default(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "suite", labelled_rows(4))
    runs = tmp_path / "runs"
    judge = ScriptedJudge()
    assert run_eval([str(suite), "--out", str(runs / "first"), "--quiet"], judge=judge) == 0
    assert (runs / CACHE_NAME).is_file() and not (runs / "first" / CACHE_NAME).exists()
    assert judge.calls == 4
    assert run_eval([str(suite), "--out", str(runs / "second"), "--quiet"], judge=judge) == 0
    assert judge.calls == 4  # a sibling output folder shares it
    report = json.loads((runs / "second" / "report.json").read_text())
    assert report["cachedResults"] == 4
    assert run_eval([str(suite), "--out", str(tmp_path / "elsewhere" / "o"), "--quiet"], judge=judge) == 0
    assert judge.calls == 8  # another parent folder, another cache
