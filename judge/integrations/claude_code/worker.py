"""One worker of the resident judge: it takes events off the resident's socket, one at a
time, and answers each exactly as ``judge claude-code`` would in the hook process.

A worker is a fork of the warm resident (:mod:`~judge.integrations.claude_code.resident`).
For each connection it reads the event, takes on the caller's environment (all of it:
API keys, model tiers, ``CLAUDE_PROJECT_DIR``, pinning switches), working folder and
umask, parses the flags with the ``judge`` command line and calls
:func:`~judge.integrations.claude_code.adapter.respond` — the very function the hook
process would have called — with the time the hook process had already spent, so
``--timeout`` holds across the hand-off. The configuration file, the session's pin and
the state file are read per event as in process. A caller that hangs up before its
answer (Claude Code's own timeout killed it) cancels the event as a SIGTERM to the hook
process would: hook commands are killed, files removed (and the worker, if the signal
finds it outside the evaluation, ends; the resident starts another).

Between events nothing of the caller stays: the environment is replaced whole, caches
built from it (the TLS context, the temp folder) are dropped when it differs. A worker
ends after :data:`MAX_EVENTS` events, after any failure of its own, and when the resident
stopped listening; it tells the resident on its status pipe when it takes an event and
when it is done, naming the modules the event made it import (the resident imports them
too, so that the next worker starts with them).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import sys
import threading
import time
from typing import Any

from judge.integrations.claude_code.fast_path import MAX_STDIN_BYTES
from judge.integrations.claude_code.relay import PROTOCOL, peer_uid, recv_frame, send_frame

#: Events a worker answers before it makes way for a fresh fork of the resident.
MAX_EVENTS = 500
#: Largest event header (flags, environment, folder).
MAX_HEADER = 4 * 1024 * 1024
#: Seconds a worker waits for a connected caller to send its event.
READ_TIMEOUT = 30.0
_TLS_VARS = ("SSL_CERT_FILE", "SSL_CERT_DIR")
_log = logging.getLogger("judge.resident")


def work(listener: socket.socket, status_fd: int, path: str, inode: int, own: list[str], parser: Any) -> None:
    """The worker's life (in a fork of the resident): events until it ends; never returns."""
    signal.set_wakeup_fd(-1)
    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    listener.setblocking(True)
    try:
        for _ in range(MAX_EVENTS):
            conn, _ = listener.accept()
            _tell(status_fd, {"busy": True})
            before = set(sys.modules)
            try:
                if peer_uid(conn) == os.getuid():
                    serve_one(conn, own, parser)
            finally:
                conn.close()
            _tell(status_fd, {"idle": True, **_learnt(before)})
            if not _still_listening(path, inode):
                break
    except BaseException as exc:  # its caller judges in process; the resident forks another
        _log.warning("a worker ends after a failure: %s: %s", type(exc).__name__, exc)
    os._exit(0)


def serve_one(conn: socket.socket, own: list[str], parser: Any) -> None:
    """Read one event from ``conn`` and send its answer (or ``stale``, or a refusal)."""
    conn.settimeout(READ_TIMEOUT)
    try:
        header = json.loads(recv_frame(conn, MAX_HEADER))
        data = recv_frame(conn, MAX_STDIN_BYTES + 1) if header.get("stdin") else None
    except (OSError, EOFError, ValueError):  # a caller gone before its event arrived
        return
    received = time.monotonic()
    if header.get("protocol") != PROTOCOL or header.get("identity") != own:
        send_frame(conn, b'{"stale": true}')
        return
    conn.settimeout(None)
    done = threading.Event()
    watcher = threading.Thread(target=_cancel_when_gone, args=(conn, done), daemon=True)
    answer = _judge(header, data, received, parser, lambda: watcher.start())
    done.set()
    send_frame(conn, json.dumps({"answer": answer}).encode())
    if watcher.is_alive():
        conn.shutdown(socket.SHUT_RDWR)  # wakes the watcher, which then sees ``done``
        watcher.join()


def _judge(header: dict[str, Any], data: bytes | None, received: float, parser: Any, watch: Any) -> Any:
    """The caller's answer as a dict, or None when the worker declines the event (the
    caller then judges it in process)."""
    take_environment(header["env"])
    try:
        os.chdir(header["cwd"])
    except OSError:
        return None
    os.umask(int(header["umask"]))
    from judge.integrations.claude_code.adapter import respond
    from judge.integrations.claude_code.failure import hook_text

    try:
        args = parser.parse_args(["claude-code", *header["argv"]])
    except SystemExit:  # a flag the command line refuses: the caller says why
        return None
    if getattr(args, "claude_code_command", None) is not None:
        return None
    watch()
    age = float(header.get("age") or 0.0) + (time.monotonic() - received)
    answer = respond(args, hook_text(data), age=age)
    return {"stdout": answer.stdout, "stderr": answer.stderr, "code": answer.code}


def take_environment(env: dict[str, str]) -> None:
    """The caller's environment, and the caches built from the last one dropped when it
    differs (the environment stays until the next event: the caches match it)."""
    import tempfile

    changed = any(os.environ.get(name) != env.get(name) for name in _TLS_VARS)
    os.environ.clear()
    os.environ.update(env)
    time.tzset()
    tempfile.tempdir = None
    clients = sys.modules.get("judge.llm.providers.clients")
    if changed and clients is not None:
        clients.shared_ssl_context.cache_clear()


def _cancel_when_gone(conn: socket.socket, done: threading.Event) -> None:
    """The caller hung up before its answer: cancel the event (SIGTERM to this worker)."""
    import select

    poller = select.poll()
    poller.register(conn, select.POLLIN | select.POLLHUP | select.POLLRDHUP)
    poller.poll()
    if not done.is_set():
        os.kill(os.getpid(), signal.SIGTERM)


def _learnt(before: set[str]) -> dict[str, Any]:
    """What the event made this worker load, for the resident to load too."""
    clients = sys.modules.get("judge.llm.providers.clients")
    tls = bool(
        clients is not None
        and clients.shared_ssl_context.cache_info().currsize
        and not any(os.environ.get(name) for name in _TLS_VARS)
    )
    return {"modules": sorted(set(sys.modules) - before), "tls": tls}


def _tell(fd: int, message: dict[str, Any]) -> None:
    os.write(fd, json.dumps(message).encode() + b"\n")


def _still_listening(path: str, inode: int) -> bool:
    """Whether the resident still listens at ``path`` (it unlinks it when it retires)."""
    try:
        return os.stat(path).st_ino == inode
    except OSError:
        return False
