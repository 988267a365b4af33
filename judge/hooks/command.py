"""Command hooks: run a bash command or a script in a sandbox and read its answer.

The sandbox (details in :mod:`judge.hooks.sandbox`, :mod:`judge.hooks.supervisor` and, for a
long-lived judge, :mod:`judge.hooks.forkserver`): a fresh
private temp dir (removed afterwards) as HOME and, by default, working directory; a scrubbed
environment (an allowlist plus the names the hook lists); the context JSON on stdin (then
stdin is closed); stdout/stderr captured up to a cap; a supervisor that kills every
descendant at the deadline whatever it did to its session or process group (a PID
namespace where the kernel allows); an unprivileged user when the judge runs as root.
Context values never reach a shell command line, so they cannot inject commands.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judge.config import Hook
from judge.errors import HookError
from judge.files import open_regular
from judge.hooks import forkserver
from judge.hooks.sandbox import (
    ENV_ALLOWLIST,
    HookUser,
    give_to,
    hook_env,
    hook_user,
    make_judge_undumpable,
    namespaces_wanted,
    resolve_cwd,
    supervisor_args,
    supervisor_argv,
)

__all__ = ["ENV_ALLOWLIST", "OUTPUT_CAP", "CommandResult", "run_command_hook"]

#: Bytes kept of each of stdout and stderr; the rest is drained and dropped.
OUTPUT_CAP = 1024 * 1024
_CHUNK = 65536
#: Seconds the supervisor gets to kill and reap everything after the deadline.
KILL_GRACE = 2.0


@dataclass
class CommandResult:
    """What a command hook did."""

    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    truncated: bool = False
    stdout_truncated: bool = False


def _interpreter(script: str) -> list[str]:
    first = script.lstrip("\n").split("\n", 1)[0].strip()
    if first == "#!/usr/bin/env python3":
        # Looked up on PATH by the hook's own user (an interpreter under /root is not
        # usable by `nobody`); the judge's interpreter when PATH has none.
        return ["python3" if shutil.which("python3") else sys.executable]
    return [shutil.which("bash") or "/bin/bash"]


class _Capture:
    """Drains a pipe to EOF, keeping the first :data:`OUTPUT_CAP` bytes (kept even if cut short)."""

    def __init__(self) -> None:
        self.kept = bytearray()
        self.truncated = False

    async def drain(self, stream: asyncio.StreamReader | None) -> None:
        if stream is None:
            return
        while chunk := await stream.read(_CHUNK):
            room = OUTPUT_CAP - len(self.kept)
            if room > 0:
                self.kept += chunk[:room]
            if len(chunk) > room:
                self.truncated = True

    def text(self) -> str:
        return bytes(self.kept).decode("utf-8", errors="replace")


async def _exited(proc: asyncio.subprocess.Process | forkserver.ForkedHook) -> int:
    """Wait for the process itself to exit.

    ``Process.wait()`` (Python 3.11) also waits for the pipes to close, which a forked
    child (``sleep 1000 &``) keeps open; the exit status is known before that.
    """
    if isinstance(proc, forkserver.ForkedHook):  # the fork server says when
        return await proc.exited()
    delay = 0.002
    while proc.returncode is None:
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.01)
    return proc.returncode


def _retrieve(task: asyncio.Future[Any]) -> None:
    """Mark a background task's outcome as seen (a pipe error there is not our concern)."""
    if not task.cancelled():
        task.exception()


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def _stop(proc: asyncio.subprocess.Process | forkserver.ForkedHook) -> None:
    """Ask the supervisor to kill everything below it; kill it if it does not exit soon."""
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    try:
        await asyncio.wait_for(_exited(proc), timeout=KILL_GRACE)
    except TimeoutError:
        _kill_group(proc.pid)
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await _exited(proc)


def _hook_argv(hook: Hook, workdir: str, user: HookUser | None) -> list[str]:
    if hook.script is not None:
        path = Path(workdir) / ".hook-script"
        path.write_text(hook.script, encoding="utf-8")
        give_to(user, path)
        return [*_interpreter(hook.script), str(path)]
    return [shutil.which("bash") or "/bin/bash", "-c", hook.command or ""]


#: Bytes copied between checks whether a transcript copy must stop (its hook timed out).
COPY_CHUNK = 32 * 1024 * 1024


def _copy_until(source: Path, target: Path, stop: threading.Event) -> None:
    """Copy ``source`` to a new ``target`` in kernel-side chunks until done or ``stop``."""
    with open_regular(source, "transcript") as src, open(target, "xb") as dst:
        offset = 0
        while not stop.is_set():
            sent = os.sendfile(dst.fileno(), src.fileno(), offset, COPY_CHUNK)
            if sent == 0:
                return
            offset += sent
    raise HookError("the transcript copy was stopped")


def _transcript_for(
    transcript: Path, workdir: str, user: HookUser | None, stop: threading.Event | None = None
) -> str:
    """The transcript path a hook gets: its own copy when it runs as another user (made
    until ``stop`` is set). A transcript that does not exist is named as it is, whoever
    the hook runs as."""
    if user is None or not os.path.lexists(transcript):
        return str(transcript)
    if not transcript.is_file():  # never copy a FIFO or a device
        raise HookError(f"the transcript is not a regular file: {transcript}")
    folder = Path(workdir) / ".judge"
    folder.mkdir(mode=0o700)
    copy = folder / transcript.name
    try:
        _copy_until(transcript, copy, stop or threading.Event())
        copy.chmod(0o600)
    except OSError as exc:
        raise HookError(f"cannot copy the transcript for the hook: {exc}") from None
    give_to(user, folder, copy)
    return str(copy)


async def _copied(transcript: Path, workdir: str, user: HookUser | None, limit: float) -> str:
    """:func:`_transcript_for` off the event loop and within the hook's timeout (the agent
    chooses the transcript's size: a copy of gigabytes must not hold the loop or the hook,
    and a copy past the timeout stops at its next chunk)."""
    stop = threading.Event()
    copying = asyncio.ensure_future(asyncio.to_thread(_transcript_for, transcript, workdir, user, stop))
    copying.add_done_callback(_retrieve)
    try:
        return await asyncio.wait_for(asyncio.shield(copying), limit)
    except (TimeoutError, asyncio.CancelledError) as exc:
        stop.set()
        if isinstance(exc, asyncio.CancelledError):
            raise
        raise HookError(f"timed out after {limit:g}s copying the transcript for the hook") from None


async def _start_supervisor(args: list[str], workdir: str, env: dict[str, str]) -> Any:
    """The hook's supervisor: forked by this judge's fork server where one runs
    (:mod:`judge.hooks.forkserver`), else started as a program."""
    server = forkserver.current()
    if server is not None:
        with contextlib.suppress(forkserver.Unavailable):
            return await server.spawn(args, env, workdir)
    return await asyncio.create_subprocess_exec(
        *supervisor_argv(args),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=workdir,
        env=env,
        start_new_session=True,
    )


async def run_command_hook(
    hook: Hook,
    stdin_json: str | Callable[[str | None], str],
    timeout: float | None = None,
    extra_env: dict[str, str] | None = None,
    *,
    transcript: Path | None = None,
    base_dir: Path | None = None,
    namespaces: bool | None = None,
) -> CommandResult:
    """Run ``hook`` (its ``command`` or ``script``) with ``stdin_json`` on stdin.

    ``transcript`` is offered as ``$JUDGE_TRANSCRIPT`` (a copy the hook can read when it
    runs as another user; ``stdin_json`` may be a function of that path, so the context
    can name the same copy); ``base_dir`` (the config's folder)
    anchors ``cwd: config`` and relative ``cwd`` paths; ``namespaces`` lets the supervisor
    use a PID namespace where the kernel allows it (default: ``$JUDGE_HOOK_NAMESPACES``).
    Raises HookError when the sandbox cannot be set up (a missing ``cwd`` folder, an
    unknown ``$JUDGE_HOOK_USER``).
    """
    limit = float(timeout if timeout is not None else hook.timeout)
    make_judge_undumpable()
    user = hook_user()
    with tempfile.TemporaryDirectory(prefix="judge-hook-", ignore_cleanup_errors=True) as workdir:
        give_to(user, Path(workdir))
        cwd = resolve_cwd(hook.cwd, workdir, base_dir)
        env = hook_env(workdir, hook.env, extra_env)
        copy_began = time.monotonic()
        seen_as = None if transcript is None else await _copied(transcript, workdir, user, limit)
        limit = max(0.01, limit - (time.monotonic() - copy_began))
        if seen_as is not None:
            env["JUDGE_TRANSCRIPT"] = seen_as
        if callable(stdin_json):
            stdin_json = stdin_json(seen_as)
        if namespaces is None:
            namespaces = namespaces_wanted()
        args = supervisor_args(_hook_argv(hook, workdir, user), cwd, user, namespaces, limit)
        spawn = asyncio.ensure_future(_start_supervisor(args, workdir, env))
        try:
            proc = await asyncio.shield(spawn)
        except asyncio.CancelledError:
            # Cancelled (a deadline, a signal) while the process was being set up. An
            # interrupted set-up would kill the script alone and then wait for pipes its
            # children still hold; let it finish instead and kill the whole group.
            with contextlib.suppress(Exception):
                started = await spawn
                await _stop(started)
                _kill_group(started.pid)
            raise
        out, err = _Capture(), _Capture()
        readers = asyncio.gather(out.drain(proc.stdout), err.drain(proc.stderr))

        async def feed() -> None:
            assert proc.stdin is not None
            # A lone surrogate (text decoded with surrogateescape, a JSON "\ud800") can
            # only sit inside a JSON string, where backslashreplace writes it as the
            # same JSON escape: the hook reads valid UTF-8 and the same JSON.
            data = stdin_json.encode("utf-8", "backslashreplace")
            try:
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    proc.stdin.write(data)
                    await proc.stdin.drain()
            finally:
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    proc.stdin.close()

        feeder = asyncio.ensure_future(feed())
        feeder.add_done_callback(_retrieve)
        timed_out = False
        try:
            async with asyncio.timeout(limit):
                await _exited(proc)
        except TimeoutError:
            timed_out = True
        finally:
            feeder.cancel()
            if proc.returncode is None:
                await _stop(proc)
            # The supervisor reaps every descendant before it exits; the group kill is a
            # backstop for the case it was killed itself.
            _kill_group(proc.pid)
        try:
            # The pipes close once everything below the supervisor is dead.
            await asyncio.wait_for(readers, timeout=2)
        except TimeoutError:
            pass
        return CommandResult(
            exit_code=None if timed_out else proc.returncode,
            stdout=out.text(),
            stderr=err.text(),
            timed_out=timed_out,
            truncated=out.truncated or err.truncated,
            stdout_truncated=out.truncated,
        )
