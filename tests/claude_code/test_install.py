"""``judge claude-code install``: merging judge's hook entries into Claude Code's settings."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from judge.config import config_from_data
from judge.integrations.claude_code.install import claude_code_matcher, is_judge_handler

CONFIG = """\
hooks:
  Stop:
    - type: prompt
      prompt: "Complete? $ARGUMENTS"
      timeout: 60
      maxRejections: 12
  PreToolUse:
    - type: command
      matcher: Bash
      command: "exit 0"
      timeout: 20
    - type: command
      matcher: "Edit|Write"
      command: "exit 0"
      timeout: 10
  PostToolUse:
    - type: command
      matcher: "mcp__.*"
      command: "exit 0"
      timeout: 5
"""
USER_HOOK = {"matcher": "Edit", "hooks": [{"type": "command", "command": "npx prettier --write"}]}


def install(project: Path, *flags: str, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CLAUDE_CONFIG_DIR"}
    env["HOME"] = str(home or project / "home")
    return subprocess.run(
        [sys.executable, "-m", "judge", "claude-code", "install", *flags],
        cwd=project,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "judge.yaml").write_text(CONFIG, encoding="utf-8")
    settings = {"model": "opus", "hooks": {"PreToolUse": [USER_HOOK]}}
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    return tmp_path


def settings(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def test_install_registers_exactly_the_configured_events_and_keeps_user_hooks(project: Path) -> None:
    done = install(project)
    assert done.returncode == 0, done.stderr
    data = settings(project / ".claude" / "settings.json")
    assert data["model"] == "opus"
    hooks = data["hooks"]
    assert set(hooks) == {
        "SessionStart",
        "Stop",
        "PreToolUse",
        "PreSkillShellCommand",
        "PostToolUse",
        "PostToolUseFailure",
    }
    assert hooks["PreToolUse"][0] == USER_HOOK
    config = '"$CLAUDE_PROJECT_DIR"/.claude/judge.yaml'
    command = f"{shlex.quote(sys.executable)} -m judge claude-code --config {config}"
    # Tool hooks run one after another (20 + 10 s), Stop hooks concurrently (60 s); judge keeps
    # 5 s for itself and Claude Code's timeout sits 10 s above judge's own. PreToolUse hooks
    # fail closed (their default failMode), so does Claude Code when judge cannot answer.
    flags = "--pinned --resident"
    pre = {"type": "command", "command": f"{command} --timeout 35 {flags}", "timeout": 45}
    pre["onFailure"] = "block"
    assert hooks["PreToolUse"][1] == {"matcher": "Bash|Edit|Write", "hooks": [pre]}
    assert hooks["PreSkillShellCommand"] == [{"matcher": "Bash|Edit|Write", "hooks": [pre]}]
    assert hooks["Stop"] == [
        {
            "hooks": [
                {"type": "command", "command": f"{command} --timeout 65 --pinned --resident", "timeout": 75}
            ]
        }
    ]
    post = {
        "matcher": "^(?:(?:mcp__.*))$",
        "hooks": [
            {"type": "command", "command": f"{command} --timeout 10 --pinned --resident", "timeout": 20}
        ],
    }
    assert hooks["PostToolUse"] == [post]
    assert hooks["PostToolUseFailure"] == [post]
    # A session keeps the configuration it started with: SessionStart pins it.
    start = {"type": "command", "command": f"{command} --timeout 15 --pinned --resident", "timeout": 25}
    assert hooks["SessionStart"] == [{"hooks": [start]}]
    assert "maxRejections: 12 is above Claude Code's cap of 8" in done.stderr


def test_install_is_idempotent_and_uninstall_removes_only_judge(project: Path) -> None:
    path = project / ".claude" / "settings.json"
    assert install(project).returncode == 0
    first = path.read_text(encoding="utf-8")
    again = install(project)
    assert again.returncode == 0
    assert "already up to date" in again.stdout
    assert path.read_text(encoding="utf-8") == first
    gone = install(project, "--uninstall")
    assert gone.returncode == 0, gone.stderr
    assert settings(path) == {"model": "opus", "hooks": {"PreToolUse": [USER_HOOK]}}


def test_dry_run_prints_a_diff_and_writes_nothing(project: Path) -> None:
    path = project / ".claude" / "settings.json"
    before = path.read_text(encoding="utf-8")
    done = install(project, "--dry-run")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"--- {path}\n+++ {path}\n")
    assert '+    "PostToolUseFailure": [' in done.stdout
    assert path.read_text(encoding="utf-8") == before


def test_judge_entries_under_events_it_cannot_serve_are_removed(project: Path) -> None:
    path = project / ".claude" / "settings.json"
    bad = {"hooks": [{"type": "command", "command": "judge claude-code --config x.yaml"}]}
    path.write_text(json.dumps({"hooks": {"WorktreeCreate": [bad]}}), encoding="utf-8")
    done = install(project)
    assert done.returncode == 0, done.stderr
    assert "removed judge from WorktreeCreate: judge cannot serve that event" in done.stderr
    assert "WorktreeCreate" not in settings(path)["hooks"]


@pytest.mark.parametrize(
    ("scope", "where"),
    [("local", ".claude/settings.local.json"), ("user", "home/.claude/settings.json")],
)
def test_scopes_write_their_own_settings_file(project: Path, scope: str, where: str) -> None:
    done = install(
        project, "--scope", scope, "--config", ".claude/judge.yaml", "--timeout", "9", "--rewrite", "ask"
    )
    assert done.returncode == 0, done.stderr
    hooks = settings(project / where)["hooks"]
    command = hooks["Stop"][0]["hooks"][0]["command"]
    assert command.endswith("--timeout 9 --pinned --resident --rewrite ask")
    if scope == "user":  # outside a project: an absolute configuration path
        assert shlex.quote(str(project / ".claude" / "judge.yaml")) in command
    assert hooks["Stop"][0]["hooks"][0]["timeout"] == 19


def test_no_resident_writes_commands_that_judge_in_their_own_process(project: Path) -> None:
    assert install(project, "--no-resident").returncode == 0

    def judge_commands() -> list[str]:
        hooks = settings(project / ".claude" / "settings.json")["hooks"]
        found = [h["command"] for groups in hooks.values() for group in groups for h in group["hooks"]]
        return [c for c in found if "-m judge claude-code" in c]

    assert judge_commands() and all(c.endswith("--pinned") for c in judge_commands())
    assert install(project).returncode == 0  # installed again without it: the resident is back
    assert all(c.endswith("--pinned --resident") for c in judge_commands())


def test_refusals_are_clear_and_change_nothing(project: Path) -> None:
    path = project / ".claude" / "settings.json"
    path.write_text("{not json", encoding="utf-8")
    broken = install(project)
    assert broken.returncode == 1
    assert "is not valid JSON (line 1, column 2" in broken.stderr
    assert path.read_text(encoding="utf-8") == "{not json"
    missing = install(project, "--config", "nope.yaml")
    assert missing.returncode == 1 and "no judge configuration at" in missing.stderr
    (project / "bad.yaml").write_text("hooks:\n  Stop:\n    - type: prompt\n", encoding="utf-8")
    invalid = install(project, "--config", "bad.yaml")
    assert invalid.returncode == 1 and "invalid judge configuration" in invalid.stderr


BROKEN = """\
hooks:
  Stop:
    - model: ReasoningFats
      prompt: "Complete? {% include 'missing.j2' %} $ARGUMENTS"
  PreToolUse:
    - matcher: Bash
      model: opneai:gpt-4o
      prompt: "Is {{ tool_input.command }} safe? {% if %}"
"""


def test_a_configuration_with_errors_is_refused_unless_forced(project: Path) -> None:
    """Registered, it would make judge deny every Bash call ("judge policy check could not
    run"): the installer says what is wrong, where, and leaves the settings as they were."""
    path = project / ".claude" / "settings.json"
    before = path.read_text(encoding="utf-8")
    config = project / ".claude" / "judge.yaml"
    config.write_text(BROKEN, encoding="utf-8")
    refused = install(project)
    assert (refused.returncode, refused.stdout) == (1, "")
    assert path.read_text(encoding="utf-8") == before
    lines = refused.stderr.splitlines()
    assert lines[0] == (
        f"judge claude-code install: refusing to register {config}: it has 4 error(s), and Claude Code "
        "would run judge with it (a PreToolUse policy that cannot run denies every call it polices):"
    )
    assert lines[1:5] == [
        f"  {config}: hooks.Stop[0].model: unknown tier 'ReasoningFats' (did you mean ReasoningFast?)",
        f"  {config}: hooks.Stop[0].prompt: line 1: included template not found: missing.j2",
        f"  {config}: hooks.PreToolUse[0].model: unknown provider 'opneai' in 'opneai:gpt-4o' "
        "(did you mean openai:gpt-4o?)",
        f"  {config}: hooks.PreToolUse[0].prompt: line 1: Expected an expression, "
        "got 'end of statement block'",
    ]
    assert lines[5] == f"fix them (judge validate {config}) or pass --force; nothing was changed"
    forced = install(project, "--force")
    assert forced.returncode == 0, forced.stderr
    assert forced.stderr.splitlines()[0] == f"warning: registering {config} with 4 error(s) (--force):"
    assert "PreToolUse" in settings(path)["hooks"]


def test_matchers_and_handler_recognition() -> None:
    hooks = config_from_data(
        {
            "hooks": {
                "PreToolUse": [
                    {"command": "x", "type": "command", "matcher": m} for m in ("Bash", "Read|Bash")
                ]
            }
        }
    ).hooks.PreToolUse
    assert claude_code_matcher(hooks) == "Bash|Read"
    star = config_from_data({"hooks": {"PreToolUse": [{"type": "command", "command": "x", "matcher": "*"}]}})
    assert claude_code_matcher(star.hooks.PreToolUse) == "*"
    named = config_from_data(
        {"hooks": {"PreToolUse": [{"type": "command", "command": "x", "matcher": "(?i)bash"}]}}
    )
    assert claude_code_matcher(named.hooks.PreToolUse) == "*"  # Python-only syntax: let judge filter
    assert is_judge_handler({"type": "command", "command": "judge claude-code --config a.yaml"})
    assert is_judge_handler({"type": "command", "command": "/v/bin/python -m judge claude-code"})
    assert not is_judge_handler({"type": "command", "command": "judge-lint claude-code-notes"})
    assert not is_judge_handler({"type": "prompt", "prompt": "judge claude-code"})


def test_pre_tool_use_hooks_that_fail_open_leave_claude_code_to_go_on(project: Path) -> None:
    config = project / ".claude" / "judge.yaml"
    config.write_text(
        CONFIG.replace("      timeout: 20\n", "      timeout: 20\n      failMode: allow\n").replace(
            "      timeout: 10\n", "      timeout: 10\n      mode: shadow\n"
        )
    )
    assert install(project).returncode == 0
    handler = settings(project / ".claude" / "settings.json")["hooks"]["PreToolUse"][1]["hooks"][0]
    assert "onFailure" not in handler  # one allows on error, the other is a shadow hook


def test_a_shadow_agents_policy_does_not_make_claude_code_block_when_judge_cannot_answer(
    project: Path,
) -> None:
    config = project / ".claude" / "judge.yaml"
    config.write_text(
        "customAgents:\n  watcher:\n    mode: shadow\n    hooks:\n      PreToolUse:\n"
        "        - type: command\n          matcher: Bash\n          command: 'exit 0'\n"
    )
    assert install(project).returncode == 0
    hooks = settings(project / ".claude" / "settings.json")["hooks"]
    for event in ("PreToolUse", "PreSkillShellCommand"):
        handler = hooks[event][-1]["hooks"][0]
        assert "judge" in handler["command"] and "onFailure" not in handler


def test_a_symlinked_settings_file_is_written_through_to_its_target(project: Path) -> None:
    # settings kept in a dotfiles repository: the link must stay a link
    path = project / ".claude" / "settings.json"
    target = project / "dotfiles" / "settings.json"
    target.parent.mkdir()
    target.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    path.unlink()
    path.symlink_to(target)
    done = install(project)
    assert done.returncode == 0, done.stderr
    assert path.is_symlink() and "claude-code" in target.read_text(encoding="utf-8")
    assert settings(target)["hooks"]["PreToolUse"][0] == USER_HOOK


def test_a_new_settings_file_follows_the_umask_and_a_read_only_one_is_refused(project: Path) -> None:
    path = project / ".claude" / "settings.json"
    path.unlink()
    previous = os.umask(0o022)
    try:
        assert install(project).returncode == 0
    finally:
        os.umask(previous)
    assert path.stat().st_mode & 0o777 == 0o644
    before = path.read_text(encoding="utf-8")
    path.chmod(0o444)
    refused = install(project, "--uninstall")
    assert refused.returncode == 1 and "is read-only" in refused.stderr
    assert path.read_text(encoding="utf-8") == before


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ('{"x": 1e400}', None),  # Python reads Infinity: writing it would break Claude Code's JSON
        ('{"x": NaN}', None),
        ('{"env": {"X": "\\ud800"}}', '"X": "\\ud800"'),  # a lone surrogate: kept as its escape
    ],
)
def test_settings_judge_cannot_write_back_exactly_are_refused_or_escaped(
    project: Path, text: str, kept: str | None
) -> None:
    path = project / ".claude" / "settings.json"
    path.write_text(text, encoding="utf-8")
    done = install(project)
    if kept is None:
        assert done.returncode == 1 and "a number JSON cannot keep" in done.stderr
        assert path.read_text(encoding="utf-8") == text
    else:
        assert done.returncode == 0, done.stderr
        written = path.read_text(encoding="utf-8")
        assert kept in written and json.loads(written)["env"]["X"] == "\ud800"


def test_http_entries_only_where_a_failing_request_cannot_let_a_check_through(project: Path) -> None:
    config = CONFIG + "  SubagentStop:\n    - {type: command, command: 'exit 0', failMode: block}\n"
    (project / ".claude" / "judge.yaml").write_text(config, encoding="utf-8")
    assert install(project, "--http", "http://127.0.0.1:8080/").returncode == 0
    hooks = settings(project / ".claude" / "settings.json")["hooks"]
    kinds = {
        event: [h["type"] for g in groups for h in g["hooks"] if is_judge_handler(h)]
        for event, groups in hooks.items()
    }
    # Fail-open events post to the service; PreToolUse and fail-closed events keep commands
    # (and SessionStart, which pins the configuration those commands are judged by).
    assert kinds == {
        "SessionStart": ["command"],
        "Stop": ["http"],
        "SubagentStop": ["command"],
        "PreToolUse": ["command"],
        "PreSkillShellCommand": ["command"],
        "PostToolUse": ["http"],
        "PostToolUseFailure": ["http"],
    }
    stop = hooks["Stop"][0]["hooks"][0]
    assert stop["url"] == "http://127.0.0.1:8080/api/v2/claude-code?timeout=65" and stop["timeout"] == 75
    assert stop["headers"] == {"Authorization": "Bearer $JUDGE_API_TOKEN"}
    assert stop["allowedEnvVars"] == ["JUDGE_API_TOKEN"]
    assert install(project, "--uninstall").returncode == 0  # the http entries are judge's too
    assert settings(project / ".claude" / "settings.json")["hooks"] == {"PreToolUse": [USER_HOOK]}
