"""Helpers for the command-hook sandbox tests: run a hook from a separate judge process
(its environment fixed at exec, as a real judge's is), and find processes by a token in
their command line (pids inside a hook's PID namespace are not the host's)."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import judge

ROOT = Path(judge.__file__).resolve().parent.parent

#: Runs one command hook with judge.hooks.command and prints the CommandResult as JSON
#: (through a fork server when the mode says so: the judge's fork server stays its child).
RUNNER = """
import asyncio, dataclasses, json, sys
from judge.hooks import forkserver
from judge.hooks.command import run_command_hook
from judge.config import Hook
hook = Hook.model_validate(json.loads(sys.argv[1]))
if sys.argv[2].endswith("/forkserver"):
    forkserver.start()
result = asyncio.run(run_command_hook(hook, "{}", namespaces=sys.argv[2].startswith("ns")))
print(json.dumps(dataclasses.asdict(result)))
forkserver.stop()
"""


def token() -> tuple[str, str]:
    """A unique number usable as a `sleep` argument and findable in /proc/*/cmdline, and
    the same number spelled for bash so that no command line but the sleeper's holds it."""
    digits = f"{uuid.uuid4().int % 10**9:09d}"
    return f"1000.{digits}", f"1000.''{digits}"


def pids_with(marker: str) -> list[int]:
    """Host pids of live (non-zombie) processes whose command line contains ``marker``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker in cmdline and state != "Z":
            found.append(int(name))
    return found


def wait_for(marker: str, within: float = 10.0) -> list[int]:
    """Poll until a process carrying ``marker`` runs (bounded); its pids."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if pids := pids_with(marker):
            return pids
        time.sleep(0.02)
    return []


@functools.cache
def namespaces_work() -> bool:
    """Whether this kernel lets the supervisor create its namespaces (tried in a fresh
    process, as the supervisor is: a non-dumpable judge may not write its own id maps)."""
    code = (
        "import os, sys; from judge.hooks.supervisor import enter_namespaces as e; "
        "sys.exit(0 if e(os.geteuid() == 0) else 1)"
    )
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": python_path()}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=60, check=False)
    return done.returncode == 0


#: The supervisor with and without a PID namespace, started as a program or forked by a
#: fork server (:mod:`judge.hooks.forkserver`, what ``judge serve`` and the resident judge use).
MODES = ["ns", "no-ns", "ns/forkserver", "no-ns/forkserver"]


def skip_unless_mode(mode: str) -> None:
    import pytest

    if mode.startswith("ns") and not namespaces_work():
        pytest.skip("this kernel refuses PID/user namespaces (the supervisor falls back)")


@contextlib.contextmanager
def sandbox_mode(mode: str) -> Iterator[bool]:
    """Run this process's hooks as ``mode`` says; whether they get a PID namespace."""
    from judge.hooks import forkserver

    if mode.endswith("/forkserver"):
        forkserver.start()
    try:
        yield mode.startswith("ns")
    finally:
        forkserver.stop()


def python_path() -> str:
    """A PYTHONPATH giving another Python process (or user) this process's imports."""
    return os.pathsep.join([str(ROOT), *(p for p in sys.path if p)])


def other_user_python() -> list[str] | None:
    """A command running Python as uid 4242 with this package importable, or None."""
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        return None
    for python in (sys.executable, "/usr/bin/python3", "/usr/local/bin/python3"):
        cmd = [setpriv, "--reuid=4242", "--regid=4242", "--clear-groups", python]
        probe = subprocess.run(
            # the judge starts its supervisor with sys.executable: it must run as that user
            [
                *cmd,
                "-c",
                "import subprocess, sys; "
                "subprocess.run([sys.executable, '-c', 'import judge.hooks.command'], check=True)",
            ],
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": python_path()},
            capture_output=True,
            timeout=60,
            check=False,
        )
        if probe.returncode == 0:
            return cmd
    return None


def run_judge(
    hook: dict[str, Any],
    mode: str,
    env: dict[str, str],
    python: list[str] | None = None,
    via_shell: bool = True,
    cwd: Path = Path("/"),
) -> subprocess.CompletedProcess[str]:
    """Run ``hook`` from a fresh judge process whose environment is ``env`` (plus PATH).

    With ``via_shell`` the judge is started by a shell that stays its parent (holding the
    same environment), so a hook walking up its ancestors meets more than the judge.
    """
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": python_path()}
    argv = [*(python or [sys.executable]), "-c", RUNNER, json.dumps(hook), mode]
    if via_shell:
        argv = ["sh", "-c", '"$@"; status=$?; exit $status', "sh", *argv]
    return subprocess.run(
        argv, env={**base, **env}, capture_output=True, text=True, timeout=120, check=False, cwd=cwd
    )


def user_namespaces_work(python: list[str]) -> bool:
    """Whether ``python`` (another user) may create the supervisor's namespaces."""
    code = (
        "import sys; from judge.hooks.supervisor import enter_namespaces as e; sys.exit(0 if e(False) else 1)"
    )
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": python_path()}
    done = subprocess.run(
        [*python, "-c", code], env=env, capture_output=True, timeout=60, check=False, cwd="/"
    )
    return done.returncode == 0
