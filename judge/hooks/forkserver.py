"""The fork server: command hooks of a long-lived judge start by a fork, not a new interpreter.

Every command hook runs under a supervisor (:mod:`judge.hooks.supervisor`): the subreaper
that kills all the hook left behind, the user switch, the PID namespace. Started as a
program of its own, that supervisor costs an interpreter's start-up (~13 ms of CPU) per
hook. A judge that lives long — ``judge serve``, the resident Claude Code judge — starts
one **fork server** instead (:mod:`judge.hooks.zygote`): a small program holding the
supervisor's code, started with ``-I -S``, an empty environment and its own session; it
holds no secret. For each hook the judge opens a connection to it and sends one message:
the supervisor's arguments, the hook's (already scrubbed) environment, its working folder
and umask, and three file descriptors (the hook's stdin, stdout and stderr pipes). The
server forks; the child is that hook's supervisor, exactly as one started by itself would be. The connection
(``SOCK_SEQPACKET`` in a private 0700 folder) then carries ``pid N`` back and, once the
supervisor has been reaped, ``status S`` (its raw wait status); the judge sends ``term``
(its deadline) or ``kill``, and a connection closed early terminates the hook. The server
exits with the judge (``PR_SET_PDEATHSIG``).

Where no fork server runs (a one-shot ``judge claude-code``, ``judge run``, the Python
API), or it cannot be reached, :mod:`judge.hooks.command` starts the supervisor as a
program as before: same sandbox, same answers.
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

from judge.hooks import zygote

__all__ = ["ForkServer", "ForkedHook", "Unavailable", "current", "start", "stop"]

#: Largest spec the server reads (a larger one gets a supervisor of its own).
MAX_SPEC = zygote.MAX_SPEC


class Unavailable(Exception):
    """No hook was handed to the fork server: start the supervisor as a program."""


class ForkedHook:
    """A hook's supervisor forked by the server, with what ``asyncio.subprocess.Process``
    offers :mod:`judge.hooks.command`: ``pid``, ``returncode``, the three pipes,
    ``send_signal`` and ``kill``."""

    def __init__(self, sock: socket.socket, pid: int) -> None:
        self.sock = sock
        self.pid = pid
        self.returncode: int | None = None
        self.stdin: asyncio.StreamWriter | None = None
        self.stdout: asyncio.StreamReader | None = None
        self.stderr: asyncio.StreamReader | None = None
        self._watch: asyncio.Task[None] | None = None

    async def _wait(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            reply = await loop.sock_recv(self.sock, 64)
        except OSError:
            reply = b""
        if reply.startswith(b"status "):
            self.returncode = os.waitstatus_to_exitcode(int(reply[7:]))
        else:  # the server is gone: its supervisors die by their own deadline
            self.returncode = -signal.SIGKILL
        self.sock.close()

    async def exited(self) -> int:
        """Wait for the supervisor's end (its status from the server); its return code."""
        assert self._watch is not None
        await asyncio.shield(self._watch)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        """SIGTERM: the supervisor kills the hook's tree and exits; else SIGKILL."""
        if self.returncode is None:
            with contextlib.suppress(OSError):
                self.sock.send(b"term" if sig == signal.SIGTERM else b"kill")

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class ForkServer:
    """The fork server process of this judge and the folder of its socket."""

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="judge-forkserver-")
        self.path = os.path.join(self.folder, "hooks.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            listener.bind(self.path)
            listener.listen(128)
            argv = [sys.executable, "-I", "-S", zygote.__file__, str(listener.fileno())]
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                pass_fds=(listener.fileno(),),
                env={},
                start_new_session=True,
            )
        except BaseException:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise
        finally:
            listener.close()
        self.owner = os.getpid()

    async def spawn(self, args: list[str], env: dict[str, str], workdir: str) -> ForkedHook:
        """Hand one hook to the server; its supervisor, with the pipes connected.

        :class:`Unavailable` when the server cannot take it (nothing was started).
        """
        loop = asyncio.get_running_loop()
        spec = json.dumps({"args": args, "env": env, "workdir": workdir, "umask": _umask()})
        payload = spec.encode("utf-8", "surrogateescape")
        if len(payload) > MAX_SPEC:
            raise Unavailable("the hook's spec is too large for the fork server")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        sock.setblocking(False)
        try:
            await loop.sock_connect(sock, self.path)
        except OSError as exc:
            sock.close()
            raise Unavailable(f"the fork server cannot be reached: {exc}") from None
        pipes = [os.pipe() for _ in range(3)]
        theirs = [pipes[0][0], pipes[1][1], pipes[2][1]]
        try:
            sock.sendmsg([payload], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", theirs))])
            reply = await loop.sock_recv(sock, 64)
        except OSError:
            reply = b""
        finally:
            for fd in theirs:
                os.close(fd)
        if not reply.startswith(b"pid "):
            sock.close()
            for fd in (pipes[0][1], pipes[1][0], pipes[2][0]):
                os.close(fd)
            raise OSError("the fork server did not start the hook's supervisor")
        hook = ForkedHook(sock, int(reply[4:]))
        hook.stdin = await _writer(loop, pipes[0][1])
        hook.stdout = await _reader(loop, pipes[1][0])
        hook.stderr = await _reader(loop, pipes[2][0])
        hook._watch = asyncio.ensure_future(hook._wait())
        return hook

    def close(self) -> None:
        """Stop the server (hooks still running are terminated) and remove its folder;
        only in the process that started it (a forked copy of this object does nothing)."""
        if self.owner != os.getpid():
            return
        with contextlib.suppress(ProcessLookupError):
            self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def _umask() -> int:
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


async def _reader(loop: asyncio.AbstractEventLoop, fd: int) -> asyncio.StreamReader:
    reader = asyncio.StreamReader(limit=2**16, loop=loop)
    pipe = open(fd, "rb", 0)  # noqa: SIM115 (the transport closes it)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), pipe)
    return reader


async def _writer(loop: asyncio.AbstractEventLoop, fd: int) -> asyncio.StreamWriter:
    pipe = open(fd, "wb", 0)  # noqa: SIM115 (the transport closes it)
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.streams.FlowControlMixin(loop=loop), pipe
    )
    return asyncio.StreamWriter(transport, protocol, None, loop)


_current: ForkServer | None = None
#: ``JUDGE_FORKSERVER=0``: every hook starts its own supervisor, as a one-shot judge does.
SWITCH_ENV = "JUDGE_FORKSERVER"
_log = logging.getLogger("judge.hooks")


def start() -> ForkServer | None:
    """Start this process's fork server (from a thread that lives as long as it should:
    the server ends with the thread that started it); the one already running, if any.
    None when it is switched off or cannot start (hooks then start their own supervisors)."""
    global _current
    if os.environ.get(SWITCH_ENV, "1").strip().lower() in ("0", "off", "false", "no"):
        return None
    if _current is None:
        try:
            _current = ForkServer()
        except OSError as exc:
            _log.warning("no fork server for command hooks (%s): each starts its own supervisor", exc)
    return _current


def current() -> ForkServer | None:
    """The fork server hooks of this process use (None: each starts its own supervisor)."""
    server = _current
    if server is not None and server.owner == os.getpid() and server.proc.poll() is not None:
        return None  # it died: the hooks start their own supervisors
    return server


def stop() -> None:
    """Stop this process's fork server, if it runs."""
    global _current
    server, _current = _current, None
    if server is not None:
        server.close()
