"""The service's start-up: the HTTP gate service (:mod:`judge.service.app`) run under uvicorn
(:mod:`judge.cli.serve` turns the flags into settings and binds the socket).

The listening socket is bound before uvicorn starts, so ``--port 0`` works: the line
``judge serve: listening on http://HOST:PORT`` on stderr names the real port.
SIGINT/SIGTERM shut down gracefully: the socket stops accepting, in-flight requests
finish (their audit lines are written whole), then the process exits 0.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
from collections.abc import Generator
from pathlib import Path

import uvicorn
from starlette.applications import Starlette

from judge.hooks.calibration import status_lines
from judge.service.app import (
    SETTINGS_ENV,
    ServerSettings,
    configure_logging,
    connection_limits,
    settings_to_env,
)
from judge.service.limits import GuardedH11Protocol, accept_backlog, configure
from judge.service.metrics import MULTIPROC_ENV

#: The standard asyncio loop even where uvloop is installed (uvicorn's "auto" would pick
#: it): in bench/bench_service.py uvloop made each command hook's process start about
#: twice as costly, more than it saves in the HTTP layer.
LOOP = "asyncio"


def _err(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (IPv6 when ``host`` has a colon).

    The protocol is named (``IPPROTO_TCP``, not 0): asyncio turns on ``TCP_NODELAY`` only
    for sockets whose ``proto`` says TCP, and accepted sockets inherit it from this one.
    Without it every response on a kept-alive connection (headers and body go out in two
    writes) waited ~40 ms for the client's delayed ACK (Nagle). ``TCP_NODELAY`` is also
    set here, on the listening socket, which Linux copies to accepted sockets.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def run_service(
    settings: ServerSettings,
    app: Starlette,
    sock: socket.socket,
    workers: int,
    config_path: str | None,
    host: str,
) -> None:
    """Serve ``app`` on ``sock`` (``workers`` processes) until SIGINT/SIGTERM; the start-up
    lines on stderr name the real port and the limits in force."""
    store = app.state.service.store
    configure_logging()
    port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    auth = (
        "bearer token required" if settings.api_token else "no auth (set JUDGE_API_TOKEN to require a token)"
    )
    _keep_signals_quiet()  # from here a SIGTERM/SIGINT is kept for uvicorn, never lost
    _err(f"judge serve: listening on http://{shown}:{port}")
    _err(
        f"judge serve: state {store.describe()}, "
        f"logs in {'the state database' if settings.logs == 'database' else settings.data_dir}, "
        f"transcripts dir {settings.transcripts_dir or 'none (execution_summary paths refused)'}, "
        f"max body {settings.max_body} bytes, transcripts up to {settings.max_transcript_bytes} bytes, "
        f"{auth}, {workers} worker(s)"
    )
    _err(
        f"judge serve: at most {settings.max_connections} connections per worker; request headers "
        f"within {settings.header_timeout:g}s, bodies within {settings.body_timeout:g}s, answers "
        f"taken within {settings.write_timeout:g}s"
    )
    for line in status_lines(settings.config):  # calibrated hooks: enforcing or shadow, and why
        _err(f"judge serve: {line}")
    configure(connection_limits(settings))
    try:
        if workers > 1:
            store.close()  # each worker opens its own
            _run_workers(config_path, settings, sock, workers)
        else:
            config = uvicorn.Config(
                app,
                loop=LOOP,
                http=GuardedH11Protocol,
                backlog=accept_backlog(settings.max_connections or 1),
                log_level="warning",
                access_log=False,
                lifespan="on",
            )
            _Server(config).run(sockets=[sock])
    finally:
        sock.close()
    _err("judge serve: stopped")


#: SIGINT/SIGTERM received after "listening" was printed and before uvicorn took over its
#: signals: handed to uvicorn when it starts (a stop sent right after start-up is obeyed).
_EARLY_SIGNALS: list[int] = []


def _keep_signals_quiet() -> None:
    """Hold SIGINT/SIGTERM until uvicorn handles them (see :data:`_EARLY_SIGNALS`). After a
    graceful shutdown uvicorn re-raises the signal it caught; this handler then only notes
    it, so serve_main returns 0 instead of dying by SIGTERM/KeyboardInterrupt."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda sig, _frame: _EARLY_SIGNALS.append(sig))


def _early_signals() -> list[int]:
    taken = list(_EARLY_SIGNALS)
    _EARLY_SIGNALS.clear()
    return taken


class _Server(uvicorn.Server):
    """uvicorn's server, obeying a stop signal that came before its own handlers."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        with super().capture_signals():
            for sig in _early_signals():
                self.handle_exit(sig, None)
            yield


def _run_workers(
    config_path: str | None, settings: ServerSettings, sock: socket.socket, workers: int
) -> None:
    """Several worker processes on one socket; they share the SQLite store and the logs."""
    from uvicorn.supervisors import Multiprocess

    if config_path:
        config_path = str(Path(config_path).resolve())
    os.environ[SETTINGS_ENV] = settings_to_env(config_path, settings)
    # The workers count into files of one private folder, so any of them reports them all.
    metrics_dir = Path(tempfile.mkdtemp(prefix="judge-metrics-"))
    os.environ[MULTIPROC_ENV] = str(metrics_dir)
    config = uvicorn.Config(
        "judge.service.app:app_from_env",
        factory=True,
        loop=LOOP,
        http="judge.service.limits:GuardedH11Protocol",
        backlog=accept_backlog(settings.max_connections or 1),
        workers=workers,
        log_level="warning",
        access_log=False,
        lifespan="on",
    )
    try:
        supervisor = Multiprocess(config, sockets=[sock])  # its signal handlers are set now
        supervisor.signal_queue.extend(_early_signals())
        supervisor.run()
    finally:
        shutil.rmtree(metrics_dir, ignore_errors=True)
