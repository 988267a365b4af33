"""The fork server: a long-lived judge's command hooks are forked from a small resident
program instead of each starting a Python interpreter, with the same sandbox and the same
answers; without it (or when it is gone) each hook starts its own supervisor as before."""

from __future__ import annotations

import array
import asyncio
import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from judge.config import Hook
from judge.hooks import forkserver
from judge.hooks.command import run_command_hook
from tests.security.sandbox_probe import pids_with, python_path, token

#: Prints what a hook can see of itself: its input, folder, umask, environment and parents.
INTROSPECT = r"""
import json, os, sys
data = sys.stdin.read()
def parent_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])
print(json.dumps({
    "stdin": data, "cwd_is_home": os.getcwd() == os.environ["HOME"], "umask": os.umask(0),
    "env": sorted(os.environ), "grandparent": parent_of(os.getppid()),
}))
print("to stderr", file=sys.stderr)
sys.exit(3)
"""


def script(text: str, **options: object) -> Hook:
    return Hook.model_validate({"type": "command", "script": "#!/usr/bin/env python3\n" + text, **options})


@pytest.fixture
def server() -> Iterator[forkserver.ForkServer]:
    started = forkserver.start()
    assert started is not None
    try:
        yield started
    finally:
        forkserver.stop()


def _seen(result: object) -> dict[str, object]:
    out = dataclasses.asdict(result)  # type: ignore[call-overload]
    out["stdout"] = json.loads(out["stdout"])
    return out


async def test_a_hook_forked_by_the_fork_server_answers_as_one_started_as_a_program() -> None:
    hook = script(INTROSPECT)
    alone = _seen(await run_command_hook(hook, '{"x": 1}', namespaces=False))
    started = forkserver.start()
    assert started is not None
    try:
        forked = _seen(await run_command_hook(hook, '{"x": 1}', namespaces=False))
    finally:
        forkserver.stop()
    # The same answer, input, folder, umask and environment ...
    grandparents = (alone["stdout"].pop("grandparent"), forked["stdout"].pop("grandparent"))  # type: ignore[union-attr]
    assert forked == alone
    assert alone["exit_code"] == 3 and alone["stderr"] == "to stderr\n"
    # ... but the supervisor was the fork server's child, not this process's.
    assert grandparents == (os.getpid(), started.proc.pid)


async def test_a_hook_past_its_timeout_or_cancelled_through_the_fork_server_leaves_nothing(
    server: forkserver.ForkServer,
) -> None:
    marker, spelled = token()
    hook = Hook.model_validate({"type": "command", "command": f"sleep {spelled} & sleep 30", "timeout": 1})
    started = time.monotonic()
    result = await run_command_hook(hook, "{}")
    assert result.timed_out and time.monotonic() - started < 5
    assert pids_with(marker) == []
    marker, spelled = token()
    hook = Hook.model_validate({"type": "command", "command": f"sleep {spelled} & sleep 30", "timeout": 30})
    task = asyncio.ensure_future(run_command_hook(hook, "{}"))
    deadline = time.monotonic() + 10
    while not pids_with(marker) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert pids_with(marker), "the hook never started"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    deadline = time.monotonic() + 10
    while pids_with(marker) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert pids_with(marker) == []


async def test_hooks_start_their_own_supervisor_when_the_fork_server_is_gone(
    server: forkserver.ForkServer,
) -> None:
    server.proc.kill()
    server.proc.wait()
    assert forkserver.current() is None
    result = await run_command_hook(script(INTROSPECT), "{}", namespaces=False)
    assert result.exit_code == 3
    assert json.loads(result.stdout)["grandparent"] == os.getpid()


async def test_a_spec_too_large_for_the_fork_server_starts_its_own_supervisor(
    server: forkserver.ForkServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = [f"JUDGE_TEST_BIG{i}" for i in range(3)]  # (one variable may not pass 128 KiB)
    for name in names:
        monkeypatch.setenv(name, "x" * (forkserver.MAX_SPEC // 3 + 1))
    hook = script(INTROSPECT, env=names)
    result = await run_command_hook(hook, "{}", namespaces=False)
    assert result.exit_code == 3
    seen = json.loads(result.stdout)
    assert set(names) <= set(seen["env"]) and seen["grandparent"] == os.getpid()


async def test_a_malformed_request_is_refused_and_the_fork_server_goes_on(
    server: forkserver.ForkServer,
) -> None:
    for payload, fds in ((b"{}", 1), (b"not json", 3), (b'{"args": []}', 3)):
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as sock:
            sock.connect(server.path)
            pipes = [os.pipe() for _ in range(fds)]
            theirs = [r for r, _ in pipes]
            sock.sendmsg([payload], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", theirs))])
            sock.settimeout(10)
            reply = sock.recv(64)
            if reply.startswith(b"pid "):  # a spec it could read but not run: the hook fails
                assert sock.recv(64).startswith(b"status ")
            for r, w in pipes:
                os.close(r)
                os.close(w)
    result = await run_command_hook(script(INTROSPECT), "{}", namespaces=False)
    assert result.exit_code == 3 and server.proc.poll() is None


def test_the_fork_server_ends_with_its_judge_and_so_do_its_hooks() -> None:
    marker, spelled = token()
    runner = (
        "import asyncio, sys\n"
        "from judge.hooks import forkserver\n"
        "from judge.hooks.command import run_command_hook\n"
        "from judge.config import Hook\n"
        "print(forkserver.start().proc.pid, flush=True)  # type: ignore\n"
        f"hook = Hook.model_validate({{'type': 'command', 'command': 'sleep {spelled}', 'timeout': 60}})\n"
        "asyncio.run(run_command_hook(hook, '{}'))\n"
    )
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": python_path()}
    judge = subprocess.Popen([sys.executable, "-c", runner], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert judge.stdout is not None
        zygote = int(judge.stdout.readline())
        deadline = time.monotonic() + 20
        while not pids_with(marker) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert pids_with(marker), "the hook never started"
    finally:
        judge.send_signal(signal.SIGKILL)
        judge.wait(timeout=30)
    deadline = time.monotonic() + 20
    while (pids_with(marker) or Path(f"/proc/{zygote}").exists()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pids_with(marker) == []
    assert not Path(f"/proc/{zygote}").exists() or "Z" in Path(f"/proc/{zygote}/stat").read_text().split()[2]
