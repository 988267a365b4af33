"""The fork server's own program: a small stdlib-only process that forks a hook supervisor
per command hook (the protocol is :mod:`judge.hooks.forkserver`'s docstring).

Run as ``python -I -S zygote.py FD`` with an empty environment, in a session of its own;
``FD`` is an inherited listening Unix socket (``SOCK_SEQPACKET``). Like the supervisor it
must not import the ``judge`` package: it loads the supervisor's code from its own folder.
It holds no secret (the hooks' specs carry only their scrubbed environments) and is not
dumpable; the supervisors it forks are not either (they run :func:`supervise` exactly as
a supervisor started as a program would, from the hook's folder, environment and umask).
The server ends with the process that started it (``PR_SET_PDEATHSIG``, and its parent
checked every few seconds), terminating the supervisors still running.
"""

from __future__ import annotations

import importlib
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn

if __name__ == "__main__":  # run as a program: the supervisor's code sits in this folder
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sv: Any = importlib.import_module("supervisor")
else:
    sv = importlib.import_module("judge.hooks.supervisor")

signal = sv.signal
#: Largest spec message (a larger one gets a supervisor started as a program).
MAX_SPEC = 256 * 1024
_PR_SET_DUMPABLE = 4


class _Hook:
    """One connection and the supervisor it started (``pid`` 0: none yet)."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.pid = 0


def _start(request: bytes, fds: list[int], closing: list[int]) -> int:
    """Fork the supervisor of one hook; its pid. The child never returns."""
    import json

    spec = json.loads(request)
    pid = os.fork()
    if pid:
        return pid
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in closing:
            os.close(fd)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        os.setsid()
        os.umask(int(spec["umask"]))
        os.chdir(spec["workdir"])
        os.environ.clear()
        os.environ.update(spec["env"])
        sv.supervise(sv.Spec([str(a) for a in spec["args"]]))
    except BaseException as exc:  # a bad spec: this hook fails to start, the server goes on
        sv._fail(f"cannot start the hook's supervisor: {type(exc).__name__}: {exc}")
    os._exit(sv.SETUP_FAILED)


def _receive(conn: Any, socket: Any) -> tuple[bytes, list[int]]:
    """One spec message and the descriptors that come with it (``b""``: a cut message)."""
    data, ancillary, flags, _ = conn.recvmsg(MAX_SPEC, socket.CMSG_SPACE(3 * 4))
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds += [int.from_bytes(payload[i : i + 4], sys.byteorder) for i in range(0, len(payload), 4)]
    return (b"" if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC) else data), fds


def _signal(pid: int, sig: int) -> None:
    """Signal a supervisor (SIGKILL: its whole process group too)."""
    for kill in (os.killpg, os.kill) if sig == signal.SIGKILL else (os.kill,):
        try:
            kill(pid, sig)
        except OSError:
            pass


def _on_message(hook: _Hook, listener: Any, hooks: dict[int, _Hook], wakeup: list[int], socket: Any) -> None:
    if hook.pid:  # ``term``/``kill``, or the judge gone (EOF): stop the supervisor
        message = hook.conn.recv(16)
        _signal(hook.pid, signal.SIGKILL if message == b"kill" else signal.SIGTERM)
        return
    data, fds = _receive(hook.conn, socket)
    try:
        if len(fds) != 3 or not data:
            raise ValueError("a hook needs a spec and three descriptors")
        others = [h.conn.fileno() for h in hooks.values() if h is not hook]
        hook.pid = _start(data, fds, [listener.fileno(), *wakeup, *others, hook.conn.fileno()])
        hook.conn.send(b"pid %d" % hook.pid)
    except (OSError, ValueError):
        hook.conn.close()
        del hooks[id(hook.conn)]
    finally:
        for fd in fds:
            os.close(fd)


def _reap(hooks: dict[int, _Hook]) -> None:
    """Collect the supervisors that ended; tell each judge its hook's wait status."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if not pid:
            return
        for key, hook in list(hooks.items()):
            if hook.pid == pid:
                try:
                    hook.conn.send(b"status %d" % status)
                except OSError:
                    pass
                hook.conn.close()
                del hooks[key]


def serve(listen_fd: int) -> NoReturn:
    """The fork server's loop on the listening socket ``listen_fd``."""
    import select
    import socket

    parent = os.getppid()
    sv._prctl(sv.PR_SET_PDEATHSIG, signal.SIGTERM)
    sv._prctl(_PR_SET_DUMPABLE, 0)
    listener = socket.socket(fileno=listen_fd)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGTERM, sv._on_term)
    hooks: dict[int, _Hook] = {}
    try:
        while os.getppid() == parent:
            poller = select.poll()
            poller.register(listener, select.POLLIN)
            poller.register(wake_r, select.POLLIN)
            for hook in hooks.values():
                poller.register(hook.conn, select.POLLIN)
            ready = {fd for fd, _ in poller.poll(5000)}
            if wake_r in ready:
                os.read(wake_r, 512)
            _reap(hooks)
            for hook in [h for h in hooks.values() if h.conn.fileno() in ready]:
                _on_message(hook, listener, hooks, [wake_r, wake_w], socket)
            if listener.fileno() in ready:
                conn, _ = listener.accept()
                hooks[id(conn)] = _Hook(conn)
    except sv.Deadline:
        pass
    for hook in hooks.values():  # the judge is gone: so are its hooks
        if hook.pid:
            _signal(hook.pid, signal.SIGTERM)
    os._exit(0)


if __name__ == "__main__":
    serve(int(sys.argv[1]))
