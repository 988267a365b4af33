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


async def _read_capped(stream: asyncio.StreamReader | None) -> tuple[bytes, bool]:
    if stream is None:
        return b"", False
    kept = bytearray()
    truncated = False
    while True:
        chunk = await stream.read(_CHUNK)
        if not chunk:
            break
        room = OUTPUT_CAP - len(kept)
        if room > 0:
            kept += chunk[:room]
        if len(chunk) > room:
            truncated = True
    return bytes(kept), truncated


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
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=workdir,
            env=sandbox_env(workdir, extra_env),
            start_new_session=True,
        )
        readers = asyncio.gather(_read_capped(proc.stdout), _read_capped(proc.stderr))

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
                await proc.wait()
        except TimeoutError:
            timed_out = True
        finally:
            feeder.cancel()
            # Kill whatever is left of the group: the script on timeout, and children it
            # left behind holding our pipes open in every case.
            _kill_group(proc.pid)
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
        try:
            (out, out_cut), (err, err_cut) = await asyncio.wait_for(readers, timeout=5)
        except TimeoutError:
            readers.cancel()
            out, err, out_cut, err_cut = b"", b"", False, False
        return CommandResult(
            exit_code=None if timed_out else proc.returncode,
            stdout=out.decode("utf-8", errors="replace"),
            stderr=err.decode("utf-8", errors="replace"),
            timed_out=timed_out,
            truncated=out_cut or err_cut,
            stdout_truncated=out_cut,
        )
