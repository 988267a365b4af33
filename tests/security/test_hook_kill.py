"""Escaping the kill: whatever a hook's children do to their session or process group,
every descendant dies at the deadline (or when the hook ends), and the hook answers then.

Each escape runs for real; the escaped process is seen alive on the host (by the token in
its command line) before the hook ends and is gone, by pid, right after. Both supervisor
modes run: PID namespace (where the kernel allows) and subreaper only.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from judge.config import Hook
from judge.hooks.command import KILL_GRACE, run_command_hook
from tests.security.sandbox_probe import (
    MODES,
    RUNNER,
    other_user_python,
    pids_with,
    python_path,
    run_judge,
    sandbox_mode,
    skip_unless_mode,
    token,
    wait_for,
)

DAEMONIZE = (
    "import os, sys\n"
    "if os.fork(): sys.exit(0)\n"
    "os.setsid()\n"
    "if os.fork(): sys.exit(0)\n"
    "os.chdir('/')\n"
    "for fd in (0, 1, 2): os.close(fd)\n"
    "os.execvp('sleep', ['sleep', sys.argv[1] + sys.argv[2]])\n"
)

#: How a child leaves the hook's session or process group; ``{t}`` is the sleeper's token.
ESCAPES = {
    "setsid": "setsid sleep {t} </dev/null >/dev/null 2>&1 &",
    "setsid -f (double fork)": "setsid -f sleep {t} </dev/null >/dev/null 2>&1",
    "own process group": "set -m; sleep {t} </dev/null >/dev/null 2>&1 &",
    "python daemonizer": 'python3 -c "$DAEMON" {a} {b}',
    "holding our stdout": "setsid sleep {t} &",
}


def escape_command(kind: str, bash_token: str, then: str) -> str:
    a, b = bash_token.split("''")
    text = ESCAPES[kind].format(t=bash_token, a=a, b=b)
    return f"DAEMON={_quoted(DAEMONIZE)}\n{text}\n{then}"


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


async def _run_and_watch(
    hook: Hook, marker: str, namespaces: bool, seen_flag: Path | None = None
) -> tuple[list[int], float, object]:
    """Run the hook; while it runs, find the escaped sleeper's host pids (and then create
    ``seen_flag``, which a hook may wait for)."""
    start = time.monotonic()
    task = asyncio.ensure_future(run_command_hook(hook, "{}", namespaces=namespaces))
    seen: list[int] = []
    while not task.done() and not seen:
        seen = pids_with(marker)
        await asyncio.sleep(0.01)
    if seen_flag is not None and seen:
        seen_flag.touch()
    result = await task
    return seen, time.monotonic() - start, result


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", list(ESCAPES))
async def test_escaped_children_die_at_the_deadline(kind: str, mode: str) -> None:
    skip_unless_mode(mode)
    marker, spelled = token()
    hook = Hook.model_validate(
        {"type": "command", "command": escape_command(kind, spelled, "sleep 30"), "timeout": 1}
    )
    with sandbox_mode(mode) as namespaces:
        seen, elapsed, result = await _run_and_watch(hook, marker, namespaces)
    assert seen, "the escaping child never started"
    assert result.timed_out  # type: ignore[attr-defined]
    assert elapsed < 2.5, f"answered {elapsed:.2f}s after start for a 1 s timeout"
    assert pids_with(marker) == []
    for pid in seen:
        assert not os.path.exists(f"/proc/{pid}") or pid not in pids_with(marker)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", list(ESCAPES))
async def test_escaped_children_die_when_the_hook_ends(kind: str, mode: str, hook_writable: Path) -> None:
    skip_unless_mode(mode)
    marker, spelled = token()
    # The hook waits until the test has seen its escapee running, then answers at once.
    flag = hook_writable / "seen"
    wait = f"while [ ! -e {flag} ]; do sleep 0.01; done; exit 0"
    hook = Hook.model_validate(
        {"type": "command", "command": escape_command(kind, spelled, wait), "timeout": 10}
    )
    with sandbox_mode(mode) as namespaces:
        seen, elapsed, result = await _run_and_watch(hook, marker, namespaces, flag)
    assert seen, "the escaping child never started"
    assert (result.exit_code, result.timed_out) == (0, False)  # type: ignore[attr-defined]
    assert elapsed < 8
    assert pids_with(marker) == []


@pytest.mark.slow
def test_a_judge_without_root_kills_escaped_children_too() -> None:
    """The non-root path (no privilege drop): the judge itself runs as another user."""
    python = other_user_python()
    if python is None:
        pytest.skip("needs root, setpriv and a Python usable by another user to test the non-root path")
    for mode in MODES:
        marker, spelled = token()
        # The hook says so once its escapee runs, then hangs until the deadline.
        then = f"while ! pgrep -f {marker} >/dev/null; do sleep 0.01; done; echo escaped; sleep 30"
        command = escape_command("setsid -f (double fork)", spelled, then)
        start = time.monotonic()
        done = run_judge({"type": "command", "command": command, "timeout": 2}, mode, {}, python=python)
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        assert (result["timed_out"], result["stdout"]) == (True, "escaped\n"), mode
        assert time.monotonic() - start < 15
        assert pids_with(marker) == [], mode


@pytest.mark.parametrize("mode", MODES)
def test_a_judge_killed_mid_hook_leaves_nothing_running(mode: str) -> None:
    """kill -9 of the judge: the supervisor still stops everything soon after the deadline."""
    skip_unless_mode(mode)
    marker, spelled = token()
    hook = {"type": "command", "command": escape_command("setsid", spelled, "sleep 30"), "timeout": 1}
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": python_path()}
    judge = subprocess.Popen([sys.executable, "-c", RUNNER, json.dumps(hook), mode], env=env, cwd="/")
    try:
        assert wait_for(marker), "the escaping child never started"
    finally:
        judge.kill()
        judge.wait(timeout=30)
    # Deadline (1 s) plus the supervisor's grace (2 s): gone well within 10 s.
    deadline = time.monotonic() + 10
    while pids_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pids_with(marker) == []


#: A child that forks and exits, over and over (every generation re-parented, none living
#: long); each generation adds a byte to the file named in argv[1].
#: A process that forks and exits, generation after generation (each one a dot in the file
#: it is given); it gives up by itself after a minute, so a failing run leaves nothing behind.
CHAIN = (
    "import os, sys, time\n"
    "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)\n"
    "end = time.monotonic() + 60\n"
    "while time.monotonic() < end:\n"
    "    os.write(fd, b'.')\n"
    "    if os.fork(): os._exit(0)\n"
    "    os.setsid()\n"
)


def _still_growing(path: Path) -> bool:
    before = path.stat().st_size
    time.sleep(0.5)
    return path.stat().st_size != before


@pytest.mark.parametrize("mode", MODES)
async def test_a_child_that_keeps_forking_and_exiting_dies_at_the_deadline(
    mode: str, hook_writable: Path
) -> None:
    skip_unless_mode(mode)
    for attempt in range(5):  # it used to get away in most runs
        generations = hook_writable / f"generations-{attempt}"
        generations.touch()
        generations.chmod(0o666)
        command = f"python3 -c {_quoted(CHAIN)} {generations} </dev/null >/dev/null 2>&1 &\nsleep 30"
        hook = Hook.model_validate({"type": "command", "command": command, "timeout": 2})
        start = time.monotonic()
        with sandbox_mode(mode) as namespaces:
            result = await run_command_hook(hook, "{}", namespaces=namespaces)
        elapsed = time.monotonic() - start
        assert result.timed_out
        assert generations.stat().st_size > 100, "the chain never ran"
        assert not _still_growing(generations), f"run {attempt}: a generation outlived the hook"
        # within its grace the supervisor killed everything itself (it used to be killed at
        # the end of its grace, its last escapee re-parented to PID 1)
        assert elapsed < 2 + KILL_GRACE, (
            f"run {attempt}: answered {elapsed:.2f}s after start for a 2 s timeout"
        )
