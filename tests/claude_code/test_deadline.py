"""``judge claude-code --timeout`` and signals, with real processes.

judge must answer by itself before its deadline (per the hooks' failMode), and on SIGTERM /
SIGINT kill its hook children and remove its temporary files (the rendered transcript copy
and the hooks' working directories).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# A command hook that starts a background child and waits for ever. The processes are found
# by their command line (``sleep <marker>``): hooks may run as another user, in their own
# PID namespace, where they can neither write our files nor know their host pids.
HANGING = "sleep {marker} & sleep {marker}"


def marked(marker: int) -> list[int]:
    """Host pids of running processes whose command line is ``sleep <marker>`` (zombies excluded)."""
    want = f"sleep\0{marker}\0".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "cmdline").read_bytes() != want:
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            found.append(int(entry.name))
    return found


def wait_for(condition: Any, what: str, limit: float = 30.0) -> None:
    end = time.monotonic() + limit
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


@pytest.fixture
def marker() -> Iterator[int]:
    value = random.randint(10**7, 10**8)
    yield value
    for pid in marked(value):  # never leave a stray process behind, even when a test fails
        os.kill(pid, signal.SIGKILL)


@pytest.fixture
def open_tmp() -> Iterator[Path]:
    """A temp folder hook users other than ours can enter (hooks may run as nobody)."""
    path = Path(tempfile.mkdtemp(prefix="judge-deadline-test-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def setup(
    tmp_path: Path, tmp: Path, marker: int, event: str, extra: dict[str, Any] | None = None
) -> tuple[Path, dict[str, str]]:
    hook = {"type": "command", "timeout": 120, "command": HANGING.format(marker=marker), **(extra or {})}
    if event in ("PreToolUse", "PostToolUse"):
        hook["matcher"] = "*"
    config = tmp_path / "judge.json"
    config.write_text(json.dumps({"hooks": {event: [hook]}}), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(TMPDIR=str(tmp), JUDGE_STATE=str(tmp_path / "state.sqlite"))
    # The hook keeps this test's user and the host's PID namespace, so the pids it records
    # are the ones this test can check (and its folder is reachable).
    env.update(JUDGE_HOOK_USER=str(os.getuid()), JUDGE_HOOK_NAMESPACES="0")
    env.pop("JUDGE_CONFIG", None)
    return config, env


def payload(tmp_path: Path, event: str) -> str:
    transcript = tmp_path / "session.jsonl"
    # The last line is still being written (no newline yet): judge renders such a
    # transcript into a private temporary file, which must not outlive the call.
    line = {"type": "user", "sessionId": "s1", "message": {"role": "user", "content": "hi"}}
    transcript.write_text(json.dumps(line), encoding="utf-8")
    data: dict[str, Any] = {
        "session_id": "s1",
        "transcript_path": str(transcript),
        "cwd": str(tmp_path),
        "permission_mode": "default",
        "hook_event_name": event,
    }
    if event == "Stop":
        data.update(stop_hook_active=False, last_assistant_message="Done.")
    else:
        data.update(tool_name="Bash", tool_input={"command": "cat .env"}, tool_use_id="toolu_01")
    if event == "PostToolUse":
        data["tool_response"] = {"stdout": "KEY=abc", "stderr": "", "interrupted": False, "isImage": False}
    return json.dumps(data)


def assert_all_gone(marker: int) -> None:
    """The hook's processes end (a kill lands at once; reaping takes a moment)."""
    wait_for(lambda: not marked(marker), f"the hook's processes (sleep {marker}) to end", 10)


def judge_argv(config: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "judge", "claude-code", "--config", str(config), *extra]


def run_judge(tmp_path: Path, event: str, config: Path, env: dict[str, str], timeout: str) -> Any:
    """Run judge with ``--timeout``; return its JSON answer."""
    done = subprocess.run(
        judge_argv(config, "--timeout", timeout),
        input=payload(tmp_path, event),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.slow
def test_timeout_denies_the_tool_call_and_kills_the_hook(tmp_path: Path, open_tmp: Path, marker: int) -> None:
    config, env = setup(tmp_path, open_tmp, marker, "PreToolUse")
    out = run_judge(tmp_path, "PreToolUse", config, env, "3")
    assert out == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "Hook error: judge did not finish within its --timeout of 3 s",
        }
    }
    assert_all_gone(marker)
    assert list(open_tmp.iterdir()) == []  # transcript copy and hook workdir removed


@pytest.mark.slow
def test_timeout_on_a_fail_open_stop_lets_it_through_with_a_notice(
    tmp_path: Path, open_tmp: Path, marker: int
) -> None:
    config, env = setup(tmp_path, open_tmp, marker, "Stop")
    out = run_judge(tmp_path, "Stop", config, env, "2")
    assert out == {
        "systemMessage": "judge: Stop failed_open: judge did not finish within its --timeout of 2 s; "
        "not checked"
    }
    assert_all_gone(marker)


@pytest.mark.slow
def test_timeout_on_a_fail_closed_post_tool_use_withholds_the_result(
    tmp_path: Path, open_tmp: Path, marker: int
) -> None:
    config, env = setup(tmp_path, open_tmp, marker, "PostToolUse", {"failMode": "block"})
    out = run_judge(tmp_path, "PostToolUse", config, env, "2")
    reason = "Hook error: judge did not finish within its --timeout of 2 s"
    assert out == {
        "decision": "block",
        "reason": reason,
        "hookSpecificOutput": {
            "hookEventName": "PostToolUse",
            "updatedToolOutput": {
                "stdout": f"[Hook Blocked Tool Result] {reason}",
                "stderr": "",
                "interrupted": False,
                "isImage": False,
            },
        },
    }


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_kills_hook_children_and_removes_temp_files(
    tmp_path: Path, open_tmp: Path, marker: int, sig: signal.Signals
) -> None:
    config, env = setup(tmp_path, open_tmp, marker, "PreToolUse")
    proc = subprocess.Popen(
        judge_argv(config),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdin is not None
        proc.stdin.write(payload(tmp_path, "PreToolUse"))
        proc.stdin.close()
        wait_for(lambda: len(marked(marker)) == 2, "the hook and its background child to start")
        tmp = open_tmp
        names = sorted(p.name for p in tmp.iterdir())
        assert any(n.startswith("judge-claude-code-") for n in names), names  # the rendered copy
        assert any(n.startswith("judge-hook-") for n in names), names  # the hook's workdir
        proc.send_signal(sig)
        proc.wait(timeout=30)
        assert proc.stdout is not None and proc.stderr is not None
        out, err = proc.stdout.read(), proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    answer = json.loads(out)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny"
    assert answer["permissionDecisionReason"] == f"Hook error: judge was stopped by {sig.name}"
    assert_all_gone(marker)
    assert list(tmp.iterdir()) == []


def test_timeout_flag_rejects_nonsense() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "judge", "claude-code", "--timeout", "soon"],
        input="{}",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "--timeout: must be a number of seconds, got 'soon'" in done.stderr


async def test_cancelling_while_a_hook_starts_kills_its_group(marker: int) -> None:
    """A deadline or signal can land while the hook's process is still being set up.

    An interrupted set-up used to kill the script alone, then wait for pipes that its
    background child still held: judge hung until a second signal, and the child leaked.
    """
    import asyncio

    from judge.config import Hook
    from judge.hooks.command import run_command_hook

    hook = Hook(type="command", command=HANGING.format(marker=marker), timeout=60)
    for _ in range(10):
        task = asyncio.ensure_future(run_command_hook(hook, "{}"))
        await asyncio.sleep(0)  # the process is forked; its pipes are not connected yet
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, timeout=20)
    assert_all_gone(marker)
