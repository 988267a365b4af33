"""The hook process's side of the resident judge: hand one event over, bring its answer back.

``judge claude-code --resident`` still starts once per hook event, but does almost nothing
itself: with the standard library alone it sends the event — its flags, the hook input,
the environment, the working folder and umask, and how long the process has already run
(counted against ``--timeout``) — to the resident judge of this user and judge
installation (:mod:`~judge.integrations.claude_code.resident`), which has the engine, the
SDKs and the configuration loaded, and writes back the answer it gets: the same stdout,
stderr lines and exit code the in-process adapter would have written.

Where it lives: a folder only this user can open — ``$JUDGE_RUNTIME_DIR``, else
``$XDG_RUNTIME_DIR/judge``, else ``/tmp/judge-<uid>`` (created 0700; one that is not a
folder of this user's, or is open to others, is not used) — holding, per installation
(interpreter, package folder, version), ``<key>.sock`` (the resident's Unix socket, 0600;
both sides check the other's uid with ``SO_PEERCRED``), ``<key>.lock`` (held by the
resident while it lives), ``<key>.start`` (held by the one hook process starting it) and
``<key>.log`` (the resident's own messages).

No resident listening: this process starts one (in its own session, detached from Claude
Code's pipes; one starter at a time) and waits for it a bounded time. Whenever the resident
cannot be reached, refuses the event, or goes away before answering, :func:`hand_off`
returns None and the event is judged in this process exactly as without ``--resident``:
the same answers, the same fail modes. ``JUDGE_RESIDENT=0`` turns the hand-off off.
"""

from __future__ import annotations

import _socket
import json
import os
import sys

from judge import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds on every hook event
    from typing import Any

#: Bumped when the messages below change (a resident of another protocol is another key).
PROTOCOL = 1
SWITCH_ENV = "JUDGE_RESIDENT"
RUNTIME_ENV = "JUDGE_RUNTIME_DIR"
#: Seconds a hook process waits for a resident it started (or saw starting) to listen.
START_WAIT = 10.0
#: Largest answer read back (Claude Code's own output caps are far below).
MAX_ANSWER = 64 * 1024 * 1024
#: Seconds beyond ``--timeout`` the hook process waits for the resident's answer before
#: judging in process (which then answers per the hooks' failMode at once).
ANSWER_GRACE = 2.0
_LEN = 8


class Relayed:
    """The resident's answer: what :func:`judge.cli.claude_code.write` writes."""

    __slots__ = ("code", "stderr", "stdout")

    def __init__(self, stdout: str, stderr: list[str], code: int) -> None:
        self.stdout, self.stderr, self.code = stdout, stderr, code


def enabled() -> bool:
    """Whether events may be handed over (``JUDGE_RESIDENT``, default on with ``--resident``)."""
    return os.environ.get(SWITCH_ENV, "1").strip().lower() not in ("0", "off", "false", "no")


def process_age() -> float:
    """Seconds since this process started (interpreter start-up included); 0 if unknown."""
    try:
        with open("/proc/self/stat", "rb") as f:
            stat = f.read()
        with open("/proc/uptime", "rb") as f:
            uptime = float(f.read().split()[0])
        ticks = int(stat.rsplit(b")", 1)[1].split()[19])
        return max(0.0, uptime - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


def identity() -> list[str]:
    """What makes a resident the right one for this process: the protocol, the
    interpreter, the judge package's folder and version, and the variables that change
    which code Python loads or how it decodes text."""
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    names = ("PYTHONPATH", "PYTHONHOME", "PYTHONSAFEPATH", "LANG", "LC_ALL", "LC_CTYPE")
    return [str(PROTOCOL), sys.executable, package, __version__, *(os.environ.get(n, "") for n in names)]


def resident_key(ident: list[str] | None = None) -> str:
    """The file name stem of this installation's resident."""
    from judge.integrations.claude_code.pin import sha256

    text = "\0".join(identity() if ident is None else ident)
    return str(sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:16])


def runtime_folder(create: bool = True) -> str | None:
    """The private folder of this user's residents, or None (unusable: see the docstring)."""
    uid = os.getuid()
    base = os.environ.get(RUNTIME_ENV)
    if not base:
        xdg = os.environ.get("XDG_RUNTIME_DIR")
        base = os.path.join(xdg, "judge") if xdg else f"/tmp/judge-{uid}"
    try:
        if create:
            os.makedirs(base, mode=0o700, exist_ok=True)
        st = os.lstat(base)
    except (OSError, ValueError):
        return None
    private = st.st_uid == uid and not st.st_mode & 0o077
    is_dir = (st.st_mode & 0o170000) == 0o040000
    # 107: the longest Unix socket path ("/<key>.sock" is 22 more)
    return base if is_dir and private and len(base.encode()) + 22 <= 107 else None


def peer_uid(sock: Any) -> int:
    """The uid of the process at the other end of a Unix socket (``SO_PEERCRED``)."""
    creds = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
    return int.from_bytes(creds[4:8], sys.byteorder)


def send_frame(sock: Any, data: bytes) -> None:
    sock.sendall(len(data).to_bytes(_LEN, "big") + data)


def recv_exact(sock: Any, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise EOFError("the connection closed early")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def recv_frame(sock: Any, limit: int) -> bytes:
    size = int.from_bytes(recv_exact(sock, _LEN), "big")
    if size > limit:
        raise ValueError(f"a message of {size} bytes (at most {limit})")
    return recv_exact(sock, size)


def _connect(path: str) -> Any:
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(path)
        if peer_uid(sock) != os.getuid():
            raise PermissionError(f"{path} is served by another user")
    except OSError:
        sock.close()
        return None
    return sock


def start_resident(folder: str, key: str) -> int | None:
    """Start the resident judge detached (own session, no tty, stdio to its log), unless
    another hook process is starting one right now (it holds ``<key>.start``); its pid."""
    import fcntl

    base = os.path.join(folder, key)
    fd = os.open(base + ".start", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None  # someone else is starting it: wait for the socket
    try:
        argv = [sys.executable, "-m", "judge", "claude-code", "resident", folder, key]
        log = base + ".log"
        with open(log, "ab"):  # owner-only from the start
            os.chmod(log, 0o600)
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, log, os.O_WRONLY | os.O_APPEND, 0),
            (os.POSIX_SPAWN_DUP2, 1, 2),
        ]
        return os.posix_spawn(sys.executable, argv, dict(os.environ), file_actions=actions, setsid=True)
    except OSError:
        return None
    finally:
        os.close(fd)  # the resident holds <key>.lock from now on


def _reach(folder: str, key: str, wait: float) -> Any:
    """A connection to the resident, starting it when none listens; None after ``wait`` s."""
    import time

    path = os.path.join(folder, key + ".sock")
    sock = _connect(path)
    if sock is not None:
        return sock
    started = start_resident(folder, key)
    deadline = time.monotonic() + wait
    delay = 0.005
    while time.monotonic() < deadline:
        time.sleep(delay)
        delay = min(delay * 1.5, 0.05)
        sock = _connect(path)
        if sock is not None:
            return sock
        if started is not None and _ended(started):  # it gave up (say, another one runs)
            deadline = min(deadline, time.monotonic() + 0.5)
            started = None
    return None


def _ended(pid: int) -> bool:
    try:
        return os.waitpid(pid, os.WNOHANG)[0] != 0
    except ChildProcessError:
        return True


def _answer_wait(timeout: str | None, age: float) -> float | None:
    """How long to wait for the resident's answer: ``--timeout`` (left) plus a grace."""
    if timeout is None:
        return None
    try:
        return max(0.5, float(timeout) - age + ANSWER_GRACE)
    except ValueError:
        return None


def _exchange(sock: Any, request: bytes, stdin: bytes | None, wait: float | None) -> dict[str, Any] | None:
    try:
        send_frame(sock, request)
        if stdin is not None:
            send_frame(sock, stdin)
        sock.settimeout(wait)
        reply = json.loads(recv_frame(sock, MAX_ANSWER))
    except (OSError, EOFError, ValueError):
        return None
    finally:
        sock.close()
    return reply if isinstance(reply, dict) else None


def hand_off(argv: list[str], data: bytes | None, timeout: str | None) -> Relayed | None:
    """Have the resident judge answer ``judge claude-code ARGV`` for the hook input
    ``data`` (stdin's bytes); None: judge it in this process (see the docstring).
    ``timeout``: the ``--timeout`` flag's value, if any."""
    folder = runtime_folder() if enabled() else None
    if folder is None:
        return None
    key = resident_key()
    for _attempt in range(2):  # a second time after a stale resident stepped aside
        age = process_age()
        wait = _answer_wait(timeout, age)
        sock = _reach(folder, key, START_WAIT if wait is None else min(START_WAIT, max(0.0, wait - 3.0)))
        if sock is None:
            return None
        header = {
            "protocol": PROTOCOL,
            "identity": identity(),
            "argv": argv,
            "cwd": os.getcwd(),
            "env": dict(os.environ),
            "umask": _umask(),
            "age": process_age(),
            "stdin": data is not None,
        }
        reply = _exchange(sock, json.dumps(header).encode("utf-8", "surrogatepass"), data, wait)
        if reply is None or reply.get("stale"):
            if reply is None:
                return None
            continue
        answer = reply.get("answer")
        if not isinstance(answer, dict):
            return None  # the resident declined (say, flags it does not take): in process
        stdout, stderr = str(answer.get("stdout", "")), [str(line) for line in answer.get("stderr", [])]
        return Relayed(stdout, stderr, int(answer.get("code", 0)))
    return None


def _umask() -> int:
    mask = os.umask(0o077)
    os.umask(mask)
    return mask
