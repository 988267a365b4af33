"""Command hooks: run a bash command or a script in a sandbox and read its answer.

The sandbox: a fresh temporary working directory (removed afterwards), a scrubbed
environment (only a small allowlist of the parent's variables; no API keys or tokens),
the context JSON on stdin (then stdin is closed), stdout/stderr captured up to a cap,
and the timeout enforced by killing the whole process group, so children a script
forks (``sleep 1000 &``) do not outlive it. Context values never reach a shell command
line, so they cannot inject commands.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from judge.config import Hook

#: Parent variables a hook may see. Everything else (API keys, tokens, ...) is dropped.
ENV_ALLOWLIST: tuple[str, ...] = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM")
#: Bytes kept of each of stdout and stderr; the rest is drained and dropped.
OUTPUT_CAP = 1024 * 1024
_CHUNK = 65536


@dataclass
class CommandResult:
    """What a command hook did."""

    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    truncated: bool = False
    stdout_truncated: bool = False


def sandbox_env(workdir: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The scrubbed environment of a command hook."""
    env = {k: os.environ[k] for k in ENV_ALLOWLIST if k in os.environ}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.setdefault("LANG", "C.UTF-8")
    env["HOME"] = workdir
    env["TMPDIR"] = workdir
    env["PYTHONIOENCODING"] = "utf-8"
    if extra:
        env.update(extra)
    return env


def _interpreter(script: str) -> list[str]:
    first = script.lstrip("\n").split("\n", 1)[0].strip()
    if first == "#!/usr/bin/env python3":
        return [shutil.which("python3") or sys.executable]
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


async def _exited(proc: asyncio.subprocess.Process) -> int:
    """Wait for the process itself to exit.

    ``Process.wait()`` (Python 3.11) also waits for the pipes to close, which a forked
    child (``sleep 1000 &``) keeps open; the exit status is known before that.
    """
    delay = 0.002
    while proc.returncode is None:
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.05)
    return proc.returncode


def _retrieve(task: asyncio.Future[None]) -> None:
    """Mark a background task's outcome as seen (a pipe error there is not our concern)."""
    if not task.cancelled():
        task.exception()


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def run_command_hook(
    hook: Hook,
    stdin_json: str,
    timeout: float | None = None,
    extra_env: dict[str, str] | None = None,
) -> CommandResult:
    """Run ``hook`` (its ``command`` or ``script``) with ``stdin_json`` on stdin."""
    limit = float(timeout if timeout is not None else hook.timeout)
    with tempfile.TemporaryDirectory(prefix="judge-hook-", ignore_cleanup_errors=True) as workdir:
        if hook.script is not None:
            path = Path(workdir) / ".hook-script"
            path.write_text(hook.script, encoding="utf-8")
            argv = [*_interpreter(hook.script), str(path)]
        else:
            argv = [shutil.which("bash") or "/bin/bash", "-c", hook.command or ""]
        spawn = asyncio.ensure_future(
            asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=workdir,
                env=sandbox_env(workdir, extra_env),
                start_new_session=True,
            )
        )
        try:
            proc = await asyncio.shield(spawn)
        except asyncio.CancelledError:
            # Cancelled (a deadline, a signal) while the process was being set up. An
            # interrupted set-up would kill the script alone and then wait for pipes its
            # children still hold; let it finish instead and kill the whole group.
            with contextlib.suppress(Exception):
                started = await spawn
                _kill_group(started.pid)
            raise
        out, err = _Capture(), _Capture()
        readers = asyncio.gather(out.drain(proc.stdout), err.drain(proc.stderr))

        async def feed() -> None:
            assert proc.stdin is not None
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                proc.stdin.write(stdin_json.encode("utf-8"))
                await proc.stdin.drain()
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
            # Kill whatever is left of the group: the script on timeout, and children it
            # left behind (holding our pipes open or not) in every case.
            _kill_group(proc.pid)
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await _exited(proc)
        try:
            # The pipes close once the group is dead; a process that escaped the group
            # (setsid) and still holds them is not waited for long.
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
