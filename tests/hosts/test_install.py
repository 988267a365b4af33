"""``judge <host> install``: the host's own file, judge's entries only, everything else kept."""

from __future__ import annotations

import argparse
import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from judge.integrations.hosts.codex import DIALECT as CODEX
from judge.integrations.hosts.copilot import DIALECT as COPILOT
from judge.integrations.hosts.cursor import DIALECT as CURSOR
from judge.integrations.hosts.dialect import Dialect
from judge.integrations.hosts.gemini import DIALECT as GEMINI
from judge.integrations.hosts.install import install_answer
from judge.integrations.hosts.trust import TrustError, edited_config, rekeyed_state, trusted_hash

CONFIG = {
    "hooks": {
        "PreToolUse": [{"type": "command", "matcher": "Bash", "command": "true", "timeout": 5}],
        "PostToolUse": [{"type": "command", "matcher": "Bash|Write", "command": "true", "timeout": 5}],
        "Stop": [{"type": "prompt", "prompt": "done? $ARGUMENTS", "model": "fake:allow", "maxRejections": 4}],
    }
}


def install(
    dialect: Dialect, tmp_path: Path, config: dict[str, Any] = CONFIG, **flags: Any
) -> tuple[str, str, int]:
    path = tmp_path / "judge.yaml"
    path.write_text(yaml.safe_dump(config))
    values = {"install_config": str(path), "scope": "user", "install_timeout": None, "install_rewrite": None}
    values.update(dry_run=False, uninstall=False)
    values.update(flags)
    env = {"HOME": str(tmp_path / "home"), "CODEX_HOME": str(tmp_path / "codex")}
    got = install_answer(dialect, argparse.Namespace(**values), tmp_path, env)
    return got.stdout, "\n".join(got.stderr), got.code


USER_HOOK = {"type": "command", "command": "notify-send done", "timeout": 30}


def test_codex_install_trusts_judges_hooks_and_keeps_the_users(tmp_path: Path) -> None:
    home = tmp_path / "codex"
    home.mkdir()
    hooks_file = home / "hooks.json"
    hooks_file.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [USER_HOOK]}]}}))
    approved = trusted_hash("Stop", None, USER_HOOK)
    user_record = f'[hooks.state."{hooks_file}:stop:0:0"]\nenabled = true\ntrusted_hash = "{approved}"\n'
    (home / "config.toml").write_text(f'# my settings\nmodel = "gpt-5.5"\n\n{user_record}')

    out, err, code = install(CODEX, tmp_path)
    assert code == 0, err
    assert "Codex trusts judge's hooks" in out
    document = json.loads(hooks_file.read_text())
    assert document["hooks"]["Stop"][0] == {"hooks": [USER_HOOK]}
    judge_stop = document["hooks"]["Stop"][1]["hooks"][0]
    assert "-m judge codex --config" in judge_stop["command"] and judge_stop["timeout"] == 30 + 5 + 10
    assert document["hooks"]["PreToolUse"][0]["matcher"] == "Bash"
    assert document["hooks"]["PostToolUse"][0]["matcher"] == "Bash|Write"
    text = (home / "config.toml").read_text()
    assert text.startswith('# my settings\nmodel = "gpt-5.5"')
    state = tomllib.loads(text)["hooks"]["state"]
    assert state[f"{hooks_file}:stop:0:0"]["trusted_hash"] == trusted_hash("Stop", None, USER_HOOK)
    assert state[f"{hooks_file}:stop:1:0"]["trusted_hash"] == trusted_hash("Stop", None, judge_stop)
    pre = document["hooks"]["PreToolUse"][0]
    assert state[f"{hooks_file}:pre_tool_use:0:0"]["trusted_hash"] == trusted_hash(
        "PreToolUse", "Bash", pre["hooks"][0]
    )

    assert install(CODEX, tmp_path)[0].endswith("already up to date\n")
    out, err, code = install(CODEX, tmp_path, uninstall=True)
    assert code == 0, err
    assert json.loads(hooks_file.read_text()) == {"hooks": {"Stop": [{"hooks": [USER_HOOK]}]}}
    assert tomllib.loads((home / "config.toml").read_text())["hooks"]["state"] == {
        f"{hooks_file}:stop:0:0": {"enabled": True, "trusted_hash": trusted_hash("Stop", None, USER_HOOK)}
    }


def test_the_users_trust_records_follow_their_hooks_when_judges_entries_go() -> None:
    """Records are keyed by position: a user's group behind judge's moves up when judge's
    goes, and so does its record (else Codex would skip it without a word)."""
    judge = {"type": "command", "command": "python -m judge codex --config c.yaml", "timeout": 40}
    before = {"hooks": {"Stop": [{"hooks": [judge]}, {"hooks": [USER_HOOK]}]}}
    after = {"hooks": {"Stop": [{"hooks": [USER_HOOK]}]}}
    state = {
        "/h.json:stop:0:0": {"enabled": True, "trusted_hash": "sha256:judge"},
        "/h.json:stop:1:0": {"enabled": False, "trusted_hash": "sha256:user"},
        "/other.json:stop:0:0": {"enabled": True, "trusted_hash": "sha256:other"},
    }
    moved = rekeyed_state(state, "/h.json", before, after, lambda h: h is judge or h == judge)
    assert moved == {
        "/h.json:stop:0:0": {"enabled": False, "trusted_hash": "sha256:user"},
        "/other.json:stop:0:0": {"enabled": True, "trusted_hash": "sha256:other"},
    }


def test_trust_records_kept_in_a_form_judge_does_not_edit_are_refused() -> None:
    text = 'hooks.state = { "/h.json:stop:0:0" = { enabled = true, trusted_hash = "sha256:x" } }\n'
    with pytest.raises(TrustError, match="form judge does not edit"):
        edited_config(text, "/h.json", {})
    with pytest.raises(TrustError, match="not valid TOML"):
        edited_config("model = \n", "/h.json", {})


def test_gemini_install_merges_into_its_settings_with_timeouts_in_milliseconds(tmp_path: Path) -> None:
    settings = tmp_path / "home" / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    mine = {"BeforeTool": [{"matcher": "write_file", "hooks": [USER_HOOK]}]}
    settings.write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}, "hooks": mine}))
    _, err, code = install(GEMINI, tmp_path)
    assert code == 0, err
    document = json.loads(settings.read_text())
    assert document["security"] == {"auth": {"selectedType": "gemini-api-key"}}
    assert document["hooks"]["BeforeTool"][0] == mine["BeforeTool"][0]
    (after_agent,) = document["hooks"]["AfterAgent"]
    assert after_agent["hooks"][0]["timeout"] == (30 + 5 + 10) * 1000
    assert set(document["hooks"]) == {"BeforeTool", "AfterTool", "AfterAgent"}
    install(GEMINI, tmp_path, uninstall=True)
    assert json.loads(settings.read_text()) == {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "hooks": mine,
    }


def test_copilot_install_writes_its_own_file_in_the_vs_code_form_and_warns_about_its_cap(
    tmp_path: Path,
) -> None:
    config = {
        "hooks": {"Stop": [{"type": "prompt", "prompt": "done?", "model": "fake:allow", "maxRejections": 12}]}
    }
    _, err, code = install(COPILOT, tmp_path, config)
    assert code == 0, err
    assert "maxRejections 12 is above Copilot CLI's cap of 8" in err
    document = json.loads((tmp_path / "home" / ".copilot" / "hooks" / "judge.json").read_text())
    assert document["version"] == 1
    assert (
        list(document["hooks"]) == ["Stop"]
        and "-m judge copilot" in document["hooks"]["Stop"][0]["hooks"][0]["command"]
    )
    # Both of a failed and a successful call's results are registered for PostToolUse hooks.
    install(COPILOT, tmp_path)
    document = json.loads((tmp_path / "home" / ".copilot" / "hooks" / "judge.json").read_text())
    assert set(document["hooks"]) == {"Stop", "PreToolUse", "PostToolUse", "PostToolUseFailure"}


def test_cursor_install_bounds_follow_ups_and_fails_closed_where_the_policy_does(tmp_path: Path) -> None:
    config = {
        "hooks": {
            **CONFIG["hooks"],
            "PostToolUse": [{"type": "command", "matcher": "Shel+", "command": "true"}],
        }
    }
    _, err, code = install(CURSOR, tmp_path, config, scope="project")
    assert code == 0, err
    document = json.loads((tmp_path / ".cursor" / "hooks.json").read_text())
    assert document["version"] == 1
    (stop,) = document["hooks"]["stop"]
    assert stop["loop_limit"] == 4 and "hooks" not in stop and "-m judge cursor" in stop["command"]
    (pre,) = document["hooks"]["preToolUse"]
    assert pre["failClosed"] is True and pre["matcher"] == "Bash"
    assert document["hooks"]["postToolUse"][0]["matcher"] == "*"  # a regex Cursor may not read alike


def test_a_dry_run_shows_the_change_and_writes_nothing(tmp_path: Path) -> None:
    out, err, code = install(GEMINI, tmp_path, dry_run=True)
    assert code == 0, err
    assert '+    "AfterAgent"' in out or '"AfterAgent"' in out
    assert not (tmp_path / "home" / ".gemini" / "settings.json").exists()


def test_a_hooks_file_judge_cannot_read_is_left_alone(tmp_path: Path) -> None:
    settings = tmp_path / "home" / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text("{ not json")
    _, err, code = install(GEMINI, tmp_path)
    assert code == 1 and "is not valid JSON" in err
    assert settings.read_text() == "{ not json"
