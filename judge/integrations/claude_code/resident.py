"""The resident judge: one long-lived process per user and judge installation that answers
the events ``judge claude-code --resident`` hands it (:mod:`~judge.integrations.claude_code.relay`).

A hook process pays an interpreter's start and the standard library; everything heavier —
pydantic, the configuration models, the engine, Jinja, the providers' SDKs — is loaded
here once. The resident listens on ``<key>.sock`` in the private runtime folder, holding
``<key>.lock`` while it lives (a second resident of the same key gives up at once).

**Workers.** The resident itself only keeps its workers: forks of itself, each taking
events off the socket one at a time (:mod:`~judge.integrations.claude_code.worker`, which
also says how an event is judged exactly as in the hook process). When every worker is
busy and a caller waits, it forks another; it keeps one idle worker and ends the others
after :data:`WORKER_IDLE` seconds without an event. What a worker had to import (a
provider's SDK, say) the resident imports too, so the next worker starts with it; the
TLS context likewise. Before the first fork it walks an event's first steps on made-up
input (:func:`_rehearse`), and it freezes what it holds (``gc.freeze``) so that workers
share it copy-on-write. Command hooks start through a fork server
(:mod:`judge.hooks.forkserver`).

**Replaced.** The resident exits after ``JUDGE_RESIDENT_IDLE`` seconds without events
(default 900), on SIGTERM, and when its code changes on disk (the judge modules it loaded,
checked once a second): it stops listening (the socket file goes, so the next caller
starts a new resident), ends its idle workers, lets busy ones finish and leaves. Its own
messages go to ``<key>.log``.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import importlib
import json
import logging
import os
import selectors
import signal
import socket
import sys
import threading
import time
from typing import Any

from judge.integrations.claude_code.relay import identity

IDLE_ENV = "JUDGE_RESIDENT_IDLE"
DEFAULT_IDLE = 900.0
#: Seconds an idle worker beyond the first is kept.
WORKER_IDLE = 60.0
#: Seconds between checks of the resident's own code on disk.
CODE_CHECK_SECONDS = 1.0
#: Log files above this size start again empty.
MAX_LOG = 1024 * 1024
#: What a child imports before its first event (the rest is learnt from the children).
WARM = (
    "judge.cli",
    "judge.integrations.claude_code.adapter",
    "judge.integrations.claude_code.install",
    "judge.hooks.engine",
    "judge.hooks.gate",
    "judge.hooks.command",
    "judge.llm.judge",
    "judge.logs.audit",
    "judge.state",
    "judge.transcripts.render_cache",
    "judge.validation",
    "judge.integrations.claude_code.worker",
)
_log = logging.getLogger("judge.resident")


def _idle_seconds() -> float:
    try:
        return max(1.0, float(os.environ.get(IDLE_ENV, DEFAULT_IDLE)))
    except ValueError:
        return DEFAULT_IDLE


class _Worker:
    """What the resident knows of one worker: its status pipe and whether it is busy."""

    def __init__(self, status_fd: int) -> None:
        self.status_fd = status_fd
        self.pending = bytearray()
        self.busy = False
        self.heard = False
        self.since = time.monotonic()


class Resident:
    """The resident's own process: it listens, keeps its workers, learns and retires."""

    def __init__(self, folder: str, key: str, lock_fd: int) -> None:
        self.path = os.path.join(folder, key + ".sock")
        self.lock_fd = lock_fd
        self.identity = identity()
        self.listener: socket.socket | None = None
        self.inode = 0
        self.watching = False
        self.workers: dict[int, _Worker] = {}
        self.selector = selectors.DefaultSelector()
        self.wake_r, self.wake_w = os.pipe()
        self.last_event = time.monotonic()
        self.checked = time.monotonic()
        self.code: dict[str, int] = {}
        self.stopping = False
        self.parser: Any = None
        self.silent_deaths = 0

    # -- life -----------------------------------------------------------------------------

    def listen(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)  # a dead resident's (we hold the lock)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.path)
        os.chmod(self.path, 0o600)
        listener.listen(128)
        listener.setblocking(False)
        self.listener = listener
        self.inode = os.stat(self.path).st_ino
        os.set_blocking(self.wake_w, False)
        self.selector.register(self.wake_r, selectors.EVENT_READ)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)
        signal.signal(signal.SIGTERM, self._on_term)
        for sig in (signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)

    def _on_term(self, signum: int, frame: Any) -> None:
        self.stopping = True

    def warm(self) -> None:
        from judge.hooks import forkserver
        from judge.hooks.sandbox import make_judge_undumpable

        make_judge_undumpable()  # every session's environment passes through here
        for name in WARM:
            importlib.import_module(name)
        from judge.cli import build_parser

        self.parser = build_parser()
        try:
            _rehearse(self.parser, os.path.dirname(self.path))
        except Exception as exc:  # only warmth is lost
            _log.warning("the rehearsal failed: %s: %s", type(exc).__name__, exc)
        self._note_code()
        forkserver.start()
        gc.collect()
        gc.freeze()

    def run(self) -> None:
        idle = _idle_seconds()
        self._spawn()
        while True:
            now = time.monotonic()
            busy = any(w.busy for w in self.workers.values())
            if self.stopping or (not busy and now - self.last_event > idle) or self._code_changed():
                self.retire()
            if self.listener is None and not self.workers:
                return
            waiting = not any(not worker.busy for worker in self.workers.values())
            self._watch_listener(self.listener is not None and waiting)
            for key, _ in self.selector.select(timeout=1.0):
                if key.fileobj is self.listener:
                    self._spawn()  # a caller waits and every worker is busy
                elif key.fileobj == self.wake_r:
                    with contextlib.suppress(BlockingIOError):
                        os.read(self.wake_r, 4096)
                else:
                    self._status(int(key.fd))
            self._reap()
            self._trim()

    def retire(self) -> None:
        """Stop listening and let the next resident start; end the idle workers (busy
        ones end after their event: they see the socket gone)."""
        if self.listener is None:
            return
        self._watch_listener(False)
        self.listener.close()
        self.listener = None
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == self.inode:
                os.unlink(self.path)
        os.close(self.lock_fd)
        for pid, worker in self.workers.items():
            if not worker.busy:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGTERM)
        _log.info("resident %d retires", os.getpid())

    # -- workers --------------------------------------------------------------------------

    def _watch_listener(self, on: bool) -> None:
        if on != self.watching and self.listener is not None:
            if on:
                self.selector.register(self.listener, selectors.EVENT_READ)
            else:
                self.selector.unregister(self.listener)
            self.watching = on

    def _spawn(self) -> None:
        from judge.integrations.claude_code.worker import work

        assert self.listener is not None
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            # (the lock too: a worker holding it would keep the next resident out)
            others = [w.status_fd for w in self.workers.values()]
            for fd in (read_fd, self.wake_r, self.wake_w, self.selector.fileno(), self.lock_fd, *others):
                os.close(fd)
            work(self.listener, write_fd, self.path, self.inode, self.identity, self.parser)
        os.close(write_fd)
        self.workers[pid] = _Worker(read_fd)
        self.selector.register(read_fd, selectors.EVENT_READ)

    def _status(self, fd: int) -> None:
        """A worker's news: ``{"busy": true}``, or ``{"idle": true, "modules": [...], "tls": ...}``."""
        worker = next((w for w in self.workers.values() if w.status_fd == fd), None)
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            chunk = b""
        if not chunk or worker is None:
            self.selector.unregister(fd)
            os.close(fd)
            if worker is not None:
                worker.status_fd = -1
            return
        worker.pending += chunk
        *lines, rest = bytes(worker.pending).split(b"\n")
        worker.pending = bytearray(rest)
        for line in lines:
            with contextlib.suppress(ValueError):
                news = json.loads(line)
                worker.heard = True
                worker.busy = bool(news.get("busy"))
                worker.since = self.last_event = time.monotonic()
                if news.get("idle"):
                    self._learn(news)

    def _reap(self) -> None:
        for pid in list(self.workers):
            with contextlib.suppress(ChildProcessError):
                if not os.waitpid(pid, os.WNOHANG)[0]:
                    continue
            worker = self.workers.pop(pid)
            if worker.status_fd >= 0:
                self.selector.unregister(worker.status_fd)
                os.close(worker.status_fd)
            self.silent_deaths = 0 if worker.heard else self.silent_deaths + 1
        if self.silent_deaths >= 3:  # workers die before their first event: stop forking
            _log.error("workers keep dying before their first event; this resident retires")
            self.stopping = True
        elif self.listener is not None and not self.workers:
            self._spawn()

    def _trim(self) -> None:
        """End the idle workers beyond one that waited :data:`WORKER_IDLE` seconds."""
        idle = sorted((w.since, pid) for pid, w in self.workers.items() if not w.busy)
        for since, pid in idle[1:]:
            if time.monotonic() - since > WORKER_IDLE:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGTERM)

    # -- warmth and staleness --------------------------------------------------------------

    def _learn(self, news: dict[str, Any]) -> None:
        """Import what a worker had to import, so the next one starts with it."""
        names = [m for m in news.get("modules", []) if isinstance(m, str) and m not in sys.modules]
        for name in names:
            with contextlib.suppress(Exception):
                importlib.import_module(name)
        if news.get("tls"):
            from judge.llm.providers.clients import shared_ssl_context

            with contextlib.suppress(Exception):
                shared_ssl_context()
        if threading.active_count() > 1:  # forking with other threads is not safe
            _log.warning("an import started a thread; this resident retires")
            self.stopping = True
        if names:
            self._note_code()
            gc.collect()
            gc.freeze()

    def _note_code(self) -> None:
        for name, module in list(sys.modules.items()):
            path = getattr(module, "__file__", None)
            if name.startswith("judge") and path and path not in self.code:
                with contextlib.suppress(OSError):
                    self.code[path] = os.stat(path).st_mtime_ns

    def _code_changed(self) -> bool:
        now = time.monotonic()
        if self.listener is None or now - self.checked < CODE_CHECK_SECONDS:
            return False
        self.checked = now
        for path, mtime in self.code.items():
            try:
                if os.stat(path).st_mtime_ns != mtime:
                    _log.info("%s changed", path)
                    return True
            except OSError:
                return True
        return False


#: A made-up configuration and events for :func:`_rehearse`.
REHEARSAL = """hooks:
  PreToolUse:
    - {type: command, matcher: "Bash|Edit", command: "true"}
  PostToolUse:
    - {type: command, matcher: "mcp__.*", command: "true"}
  Stop:
    - {type: prompt, model: "fake:allow", prompt: "Done? {{ final_output }} $ARGUMENTS"}
"""
REHEARSED = (
    {"hook_event_name": "PreToolUse", "session_id": "r", "tool_name": "Bash", "tool_input": {"command": "l"}},
    {"hook_event_name": "Stop", "session_id": "r", "stop_hook_active": False, "last_assistant_message": "Ok"},
)


def _rehearse(parser: Any, folder: str) -> None:
    """Walk an event's first steps once on made-up input, so that every child starts with
    what they leave behind (compiled regular expressions and templates, Jinja's lexer,
    validators). Nothing is read or written, no hook runs."""
    import asyncio

    from judge.config import config_from_text
    from judge.hooks.engine import Engine
    from judge.integrations.claude_code.context import probe_context
    from judge.integrations.claude_code.protocol import parse_input
    from judge.validation import runnable

    flags = ["--config", "c.yaml", "--state", "s", "--data-dir", "d", "--timeout", "30", "--rewrite", "ask"]
    parser.parse_args(["claude-code", *flags, "--pinned", "--resident"])
    config = runnable(config_from_text(REHEARSAL, os.path.join(folder, "rehearsal.yaml")))
    for event in REHEARSED:
        hook_input = parse_input(json.dumps(event))
        Engine(config).selected_hooks(hook_input.config_event, probe_context(hook_input))
    asyncio.run(asyncio.sleep(0))


# -- start ----------------------------------------------------------------------------------


def _log_setup() -> None:
    """The resident's stderr is ``<key>.log`` (the starter opened it): start it afresh when large."""
    with contextlib.suppress(OSError):
        if os.fstat(2).st_size > MAX_LOG:
            os.ftruncate(2, 0)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[handler])  # (the SDKs log each request at INFO)
    _log.setLevel(logging.INFO)


def serve(folder: str, key: str) -> int:
    """Be the resident judge for ``key`` in ``folder`` until it retires; the exit code."""
    _log_setup()
    lock_fd = os.open(os.path.join(folder, key + ".lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(lock_fd)
        return 0  # another resident is alive
    resident = Resident(folder, key, lock_fd)
    try:
        resident.listen()
        resident.warm()
        _log.info("resident %d listens at %s", os.getpid(), resident.path)
        resident.run()
    except Exception:
        _log.exception("the resident failed")
        resident.retire()
        return 1
    finally:
        from judge.hooks import forkserver

        forkserver.stop()
    return 0
