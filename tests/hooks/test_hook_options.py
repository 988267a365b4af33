"""Command hook options `cwd` and `env`: where a hook starts and what it may see."""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

import pytest

from judge.config import Hook, config_from_data, load_config
from judge.errors import ConfigError, HookError
from judge.hooks.command import run_command_hook


def hook(text: str, **options: object) -> Hook:
    return Hook.model_validate({"type": "command", "command": text, **options})


async def test_env_passes_only_the_named_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgres://user:secret@db/x")
    monkeypatch.setenv("DEPLOY_TARGET", "staging")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    text = (
        'echo "${DEPLOY_TARGET:-unset}|${DATABASE_URL:-unset}|'
        '${OPENAI_API_KEY:-unset}|${NOT_SET_AT_ALL-absent}"'
    )
    plain = await run_command_hook(hook(text), "{}")
    assert plain.stdout == "unset|unset|unset|absent\n"  # an unlisted variable is never passed
    named = await run_command_hook(hook(text, env=["DEPLOY_TARGET", "NOT_SET_AT_ALL"]), "{}")
    assert named.stdout == "staging|unset|unset|absent\n"  # a listed but unset one stays unset


async def test_cwd_defaults_to_the_private_temp_dir_and_can_be_the_config_folder(hook_writable: Path) -> None:
    project = hook_writable / "project"  # enterable by the hook's user, whoever that is
    (project / "checks").mkdir(parents=True)
    (project / "agent.yaml").write_text(
        "hooks:\n  Stop:\n    - type: command\n      cwd: config\n      command: pwd\n"
        "    - type: command\n      cwd: checks\n      command: pwd\n"
        "    - type: command\n      command: pwd\n"
    )
    config = load_config(project / "agent.yaml")
    stops = config.hooks.Stop
    results = [await run_command_hook(h, "{}", base_dir=config.base_dir) for h in stops]
    outputs = [r.stdout.strip() for r in results]
    assert outputs[:2] == [str(project.resolve()), str((project / "checks").resolve())]
    assert Path(outputs[2]).name.startswith("judge-hook-") and not Path(outputs[2]).exists()


async def test_cwd_project_follows_claude_project_dir(
    monkeypatch: pytest.MonkeyPatch, hook_writable: Path, tmp_path: Path
) -> None:
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(hook_writable))
    result = await run_command_hook(hook("pwd", cwd="project"), "{}")
    assert result.stdout.strip() == str(hook_writable.resolve())
    monkeypatch.delenv("CLAUDE_PROJECT_DIR")
    with pytest.raises(HookError, match=r"cwd: project needs \$CLAUDE_PROJECT_DIR, which is not set"):
        await run_command_hook(hook("pwd", cwd="project"), "{}")
    with pytest.raises(HookError, match="is not a folder"):
        await run_command_hook(hook("pwd", cwd=str(tmp_path / "missing")), "{}")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"env": ["BAD-NAME"]}, "'BAD-NAME' is not an environment variable name"),
        ({"env": ["HOME"]}, "HOME is set by the sandbox itself"),
        ({"env": ["A", "A"]}, "names a variable more than once"),
        ({"env": "OPENAI_API_KEY"}, "env"),
        ({"cwd": ""}, "must be one of temp, config, project or a folder path"),
    ],
)
def test_bad_options_are_located_config_errors(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        config_from_data({"hooks": {"Stop": [{"type": "command", "command": "true", **options}]}})
    text = str(caught.value)
    assert "hooks.Stop[0]" in text and message in text


def test_cwd_and_env_are_refused_on_prompt_hooks() -> None:
    with pytest.raises(ConfigError, match="cwd: only for command hooks"):
        config_from_data({"hooks": {"Stop": [{"type": "prompt", "prompt": "x", "cwd": "config"}]}})


async def test_a_folder_the_hook_user_cannot_enter_is_a_clear_error(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("hooks run as another user only when the judge is root")
    private = tmp_path / "private"  # under pytest's 0700 root folder
    private.mkdir()
    result = await run_command_hook(hook("pwd", cwd=str(private)), "{}")
    assert result.exit_code == 125
    assert (
        result.stderr == f"judge sandbox: cannot enter the working directory {private}: Permission denied\n"
    )


async def test_hooks_run_as_judge_hook_user_when_the_judge_is_root(monkeypatch: pytest.MonkeyPatch) -> None:
    if os.geteuid() != 0:
        pytest.skip("hooks keep the judge's user when it is not root")
    result = await run_command_hook(hook("id -u; id -G"), "{}")
    assert result.stdout.split() == ["65534", "65534"]  # nobody, no supplementary groups
    monkeypatch.setenv("JUDGE_HOOK_USER", "4321")
    result = await run_command_hook(hook("id -u"), "{}")
    assert result.stdout.strip() == "4321"
    monkeypatch.setenv("JUDGE_HOOK_USER", "no-such-user-here")
    with pytest.raises(HookError, match=r"\$JUDGE_HOOK_USER: no user named 'no-such-user-here'"):
        await run_command_hook(hook("true"), "{}")


def test_validate_warns_of_a_cwd_folder_that_does_not_exist(tmp_path: Path) -> None:
    from judge.validation import check_config

    (tmp_path / "checks").mkdir()
    (tmp_path / "agent.yaml").write_text(
        "hooks:\n  Stop:\n    - type: command\n      cwd: checks\n      command: ./run.sh\n"
        "    - type: command\n      cwd: missing\n      command: 'true'\n"
    )
    found = [str(f) for f in check_config(load_config(tmp_path / "agent.yaml"))]
    # ./run.sh is fine: it runs in checks/, which exists
    assert found == [f"warning: hooks.Stop[1].cwd: {tmp_path / 'missing'} is not a folder (yet)"]


async def test_hooks_cannot_gain_privileges_and_the_judge_is_not_dumpable() -> None:
    result = await run_command_hook(hook("grep NoNewPrivs /proc/self/status"), "{}")
    assert result.stdout.split() == ["NoNewPrivs:", "1"]  # set-uid programs gain nothing
    pr_get_dumpable = 3
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.prctl(pr_get_dumpable, 0, 0, 0, 0) == 0  # /proc/<judge>/* closed to its user


async def test_a_transcript_that_is_not_a_regular_file_is_never_copied() -> None:
    if os.geteuid() != 0:
        pytest.skip("the transcript is copied only for hooks that run as another user")
    with pytest.raises(HookError, match="the transcript is not a regular file: /dev/zero"):
        await run_command_hook(hook("true"), "{}", transcript=Path("/dev/zero"))
