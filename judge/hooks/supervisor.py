"""The per-hook supervisor: a small stdlib-only program between the judge and a command hook.

Run as ``python -I -S supervisor.py UID GID NAMESPACES DEADLINE CWD HOOK_ARGV...``
(``-`` for no uid/gid, ``1``/``0`` for namespaces, seconds) with the hook's (already scrubbed) environment;
stdin/stdout/stderr are the hook's (:func:`judge.hooks.sandbox.supervisor_argv` imports it
with ``-c`` instead, so that its bytecode is cached). It

* makes itself a child subreaper, so every orphan of the hook is re-parented to it;
* when ``namespaces`` is set and the kernel allows it, puts the hook in a new PID namespace
  (plus a user namespace when not root) under a tiny init with a fresh ``/proc`` mount: the
  hook sees no process outside, and the whole namespace dies with that init;
* when running as root, runs the hook as ``uid``/``gid`` with no supplementary groups and
  ``no_new_privs`` (root-owned private files and processes are out of its reach);
* on SIGTERM (the judge's deadline), at its own ``DEADLINE`` (set a little later, for a
  judge that died), or once the hook has exited, kills every process left
  below it (whatever it did to its session or process group) and reaps them all;
* then exits the way the hook did (same exit code, or killed by the same signal).

It must not import the ``judge`` package, and imports as little as it can (it starts for
every hook): it runs with ``-I -S`` for a quick start and an interpreter state the hook's
environment cannot influence.

A long-lived judge runs it differently: its fork server (:mod:`judge.hooks.zygote`, a
program of its own) forks a copy of this code per hook and calls :func:`supervise`.
"""

from __future__ import annotations

import ctypes
import os
import resource
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and signal (its enums) cost milliseconds at every hook
    import signal
    from typing import Any, NoReturn
else:
    import _signal as signal  # the same functions and constants, as plain ints

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 0x4000, 1 << 18
PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 36, 38
PR_GET_DUMPABLE, PR_SET_DUMPABLE = 3, 4
#: Exit code when the sandbox itself could not start the hook (message on stderr).
SETUP_FAILED = 125

_libc = ctypes.CDLL(None, use_errno=True)


class Spec:
    """What to run, from the command line: ``UID GID NAMESPACES DEADLINE CWD HOOK_ARGV...``."""

    def __init__(self, args: list[str]) -> None:
        self.uid = None if args[0] == "-" else int(args[0])
        self.gid = None if args[1] == "-" else int(args[1])
        self.namespaces = args[2] == "1"
        self.deadline = float(args[3])
        self.cwd = args[4]
        self.argv = args[5:]


class Deadline(Exception):
    """The judge asked for everything to stop (SIGTERM), or the deadline passed (SIGALRM)."""


def _on_term(signum: int, frame: Any) -> None:
    raise Deadline


def _prctl(option: int, value: int) -> int:
    result: int = _libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0)
    return result


def _fail(message: str) -> NoReturn:
    os.write(2, f"judge sandbox: {message}\n".encode(errors="replace"))
    os._exit(SETUP_FAILED)


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="ascii") as f:
        f.write(text)


def enter_namespaces(as_root: bool) -> bool:
    """New PID namespace for the children (and a user namespace unless root); False if refused."""
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWPID if as_root else CLONE_NEWPID | CLONE_NEWUSER
    if _libc.unshare(flags) != 0:
        return False
    if not as_root:
        dumpable = _libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0)
        _prctl(PR_SET_DUMPABLE, 1)  # (a non-dumpable process may not write its own maps)
        try:  # keep the same ids inside, so files and `id` look as they do outside
            _write("/proc/self/setgroups", "deny")
            _write("/proc/self/uid_map", f"{uid} {uid} 1")
            _write("/proc/self/gid_map", f"{gid} {gid} 1")
        except OSError as exc:
            _fail(f"cannot map ids in the user namespace: {exc}")
        _prctl(PR_SET_DUMPABLE, dumpable)
    return True


def _private_proc(as_root: bool) -> None:
    """In a new mount namespace, a /proc that shows only this PID namespace.

    Where the kernel refuses, the hook keeps the outside /proc: the sandbox then promises
    what it does without namespaces (a root judge's hooks run as another user anyway).
    """
    if _libc.unshare(CLONE_NEWNS) != 0:
        return
    _libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None)
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    if _libc.mount(b"proc", b"/proc", b"proc", flags, None) == 0 or as_root:
        return
    # Outside processes of the same user would stay readable: rather show no /proc at all.
    _libc.mount(b"tmpfs", b"/proc", b"tmpfs", flags, b"size=4k,mode=555")


def exec_hook(spec: Spec) -> NoReturn:
    """Become the hook: drop privileges, enter its folder, restore signals, exec."""
    try:
        if spec.uid is not None and spec.gid is not None:
            os.setgroups([])
            os.setgid(spec.gid)
            os.setuid(spec.uid)
        _prctl(PR_SET_NO_NEW_PRIVS, 1)
        cwd = spec.cwd
        try:
            os.chdir(cwd)
        except OSError as exc:
            _fail(f"cannot enter the working directory {cwd}: {exc.strerror}")
        signal.setitimer(signal.ITIMER_REAL, 0)
        for sig in (signal.SIGTERM, signal.SIGALRM, signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)
        _execvp(spec.argv)
    except OSError as exc:
        _fail(f"cannot start the hook as uid {os.getuid()}: {exc}")
    except Exception as exc:  # nothing may escape into the hook's place
        _fail(f"cannot start the hook: {type(exc).__name__}: {exc}")


def _execvp(argv: list[str]) -> NoReturn:
    """``execvp`` searched as the hook's user (the interpreter's own library, which a lazy
    import in :func:`os.execvp` would need, may be out of that user's reach)."""
    name = argv[0]
    if "/" in name:
        os.execv(name, argv)
    error: OSError = FileNotFoundError(2, "not found on PATH", name)
    for folder in os.environ.get("PATH", "/usr/bin:/bin").split(":"):
        try:
            os.execv(os.path.join(folder or ".", name), argv)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            error = exc  # e.g. EACCES: an entry this user cannot use; try the next
    raise error


def _children_of(ancestor: int) -> list[int]:
    """Every process below ``ancestor`` (from /proc: parent links, breadth first)."""
    kids: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        kids.setdefault(ppid, []).append(int(name))
    found, queue = [], [ancestor]
    while queue:
        for child in kids.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return found


def _listed_children(pid: int) -> list[int]:
    """The children of ``pid`` as its tasks' ``children`` files list them (a few reads,
    however many processes the system runs; a process gone meanwhile has none)."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                found.extend(int(child) for child in f.read().split())
        except OSError:
            continue
    return found


def _below(me: int, listed: bool) -> list[int]:
    """Every process below ``me``: from the ``children`` files where the kernel has them
    (quick enough to catch up with a process that keeps forking and exiting, whose next
    generation is re-parented here), else from a scan of all of /proc."""
    if not listed:
        return _children_of(me)
    found, queue = [], [me]
    while queue:
        for child in _listed_children(queue.pop()):
            found.append(child)
            queue.append(child)
    return found


def kill_everything_below() -> None:
    """SIGKILL every descendant and reap them all, until none remain.

    As a subreaper this process inherits every orphan, so when ``waitpid`` reports no
    children, nothing the hook started is left. A process sent SIGKILL can fork no more
    (a fork under way when it arrives fails), so a chain of processes that fork and exit
    is caught once a pass over the tree is quicker than one of its generations: each pass
    reads a few ``children`` files, not the whole of /proc.
    """
    me = os.getpid()
    listed = os.path.exists(f"/proc/{me}/task/{me}/children")
    while True:
        try:  # nothing left below (the common case): no need to look further
            if os.waitpid(-1, os.WNOHANG)[0]:
                continue
        except ChildProcessError:
            return
        for pid in _below(me, listed):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.waitpid(-1, 0)
            while os.waitpid(-1, os.WNOHANG)[0]:  # every other one already gone, too
                pass
        except ChildProcessError:
            return


def _run_init(spec: Spec, status_fd: int, as_root: bool) -> NoReturn:
    """PID 1 of the hook's namespace: start the hook, reap orphans, report the hook's status."""
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # the supervisor gone: the namespace goes too
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _private_proc(as_root)
    hook = os.fork()
    if hook == 0:
        exec_hook(spec)
    _stdin_from_null()
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == hook:
            break
    os.write(status_fd, str(status).encode())
    os._exit(0)  # the kernel now kills whatever else is left in the namespace


def _stdin_from_null() -> None:
    """Let go of the context pipe: only the hook reads it."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)


def _exit_like(status: int) -> NoReturn:
    """Exit with the hook's code, or die by the signal that killed it."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status))


def supervise(spec: Spec) -> NoReturn:
    """Run the hook of ``spec`` to its end (or deadline), kill what it left, exit like it."""
    signal.signal(signal.SIGTERM, _on_term)
    signal.signal(signal.SIGALRM, _on_term)
    # Its own deadline too, a little after the judge's: a judge killed meanwhile (kill -9)
    # leaves no hook running forever.
    signal.setitimer(signal.ITIMER_REAL, spec.deadline)
    as_root = os.geteuid() == 0
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    read_fd, write_fd = os.pipe()
    isolated = spec.namespaces and enter_namespaces(as_root)
    status = -1
    try:
        child = os.fork()
        if child == 0:
            os.close(read_fd)
            if isolated:
                _run_init(spec, write_fd, as_root)
            exec_hook(spec)
        os.close(write_fd)
        _stdin_from_null()
        _, status = os.waitpid(child, 0)
        if isolated:
            reported = os.read(read_fd, 64)
            status = int(reported) if reported else status
    except Deadline:
        status = -1
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    kill_everything_below()
    if status == -1:
        os._exit(124)
    _exit_like(status)


def main(argv: list[str]) -> NoReturn:
    supervise(Spec(argv[1:]))


if __name__ == "__main__":
    main(sys.argv)
