"""``judge serve``: run the HTTP gate service (:mod:`judge.service.app`) under uvicorn.

The listening socket is bound here, so ``--port 0`` works: the line
``judge serve: listening on http://HOST:PORT`` on stderr names the real port.
SIGINT/SIGTERM shut down gracefully: the socket stops accepting, in-flight requests
finish (their audit lines are written whole), then the process exits 0.
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import math
import os
import shutil
import signal
import socket
import sqlite3
import sys
import tempfile
import threading
from collections.abc import Generator
from pathlib import Path

import uvicorn

from judge.config import Config
from judge.errors import ConfigError, StateUnavailable
from judge.service.app import (
    DEFAULT_MAX_BODY,
    SETTINGS_ENV,
    TOKEN_ENV,
    ServerSettings,
    configure_logging,
    create_app,
    settings_to_env,
)
from judge.service.limits import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_HEADER_TIMEOUT,
    ConnectionLimits,
    GuardedH11Protocol,
    accept_backlog,
    configure,
    default_max_connections,
    max_connections_allowed,
    raise_fd_limit,
)
from judge.service.metrics import MULTIPROC_ENV
from judge.service.store import LOG_PLACES
from judge.state import is_database_url
from judge.validation import load_checked_config

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


def _workers(args: argparse.Namespace) -> int:
    workers = getattr(args, "workers", None)
    return 1 if workers is None else int(workers)


def settings_from_args(args: argparse.Namespace) -> ServerSettings:
    """Validate the flags; raise ValueError/ConfigError with a readable message."""
    config = load_checked_config(args.config, on_warning=_err) if args.config else Config()
    if not 0 <= args.port <= 65535:
        raise ValueError(f"--port must be between 0 and 65535, got {args.port}")
    max_body = args.max_body if args.max_body is not None else DEFAULT_MAX_BODY
    if max_body < 1:
        raise ValueError(f"--max-body must be a positive number of bytes, got {max_body}")
    workers = _workers(args)
    if workers < 1:
        raise ValueError(f"--workers must be at least 1, got {workers}")
    data_dir = Path(args.data_dir)
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"--data-dir {data_dir}: cannot create it: {exc}") from None
    if not os.access(data_dir, os.W_OK):
        raise ValueError(f"--data-dir {data_dir}: not writable")
    state = getattr(args, "state", None) or None
    transcripts = Path(args.transcripts_dir) if args.transcripts_dir else None
    if transcripts is not None and not transcripts.is_dir():
        raise ValueError(f"--transcripts-dir {transcripts}: not a directory")
    timeouts = {}
    for flag, default in (("header_timeout", DEFAULT_HEADER_TIMEOUT), ("body_timeout", DEFAULT_BODY_TIMEOUT)):
        value = getattr(args, flag, None)
        value = default if value is None else float(value)
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"--{flag.replace('_', '-')} must be a positive number of seconds, got {value}")
        timeouts[flag] = value
    return ServerSettings(
        config=config,
        data_dir=data_dir,
        transcripts_dir=transcripts,
        max_body=max_body,
        api_token=os.environ.get(TOKEN_ENV) or None,
        max_connections=_max_connections(getattr(args, "max_connections", None)),
        state=state,
        logs=_log_place(getattr(args, "logs", None), state),
        **timeouts,
    )


def _log_place(given: str | None, state: str | None) -> str:
    """``--logs``: as given, else "database" with a PostgreSQL state and "files" without."""
    if given is None:
        return "database" if state is not None and is_database_url(state) else "files"
    if given not in LOG_PLACES:
        raise ValueError(f"--logs must be one of {', '.join(LOG_PLACES)}, got {given!r}")
    if given == "database" and not (state is not None and is_database_url(state)):
        raise ValueError("--logs database needs --state postgresql://... (the logs go in its tables)")
    return given


def _max_connections(given: int | None) -> int:
    """The per-worker connection cap: ``--max-connections`` or derived from the (raised)
    file descriptor limit, always below it."""
    fd_limit = raise_fd_limit()
    if given is None:
        return default_max_connections(fd_limit)
    allowed = max_connections_allowed(fd_limit)
    if not 1 <= given <= allowed:
        raise ValueError(
            f"--max-connections must be between 1 and {allowed} (the open file limit is {fd_limit}), "
            f"got {given}"
        )
    return given


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address or ``localhost`` (only this machine can connect)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def serve_main(args: argparse.Namespace) -> int:
    """Run the service until SIGINT/SIGTERM; 1 for bad flags or config, else 0."""
    try:
        settings = settings_from_args(args)
    except ConfigError as exc:
        for problem in exc.problems:
            _err(f"{exc.source}: {problem}" if exc.source else problem)
        return 1
    except ValueError as exc:
        _err(str(exc))
        return 1
    if settings.api_token is None and not is_loopback(args.host):
        # Registered custom agents may carry command hooks: an open port would let anyone
        # who reaches it run commands on this host.
        _err(
            f"refusing to listen on {args.host} without {TOKEN_ENV}: anyone who can reach the port "
            "could register custom agents (which may run command hooks); set "
            f"{TOKEN_ENV} or listen on 127.0.0.1"
        )
        return 1
    try:
        # Built here even for --workers N: it opens the state database, so a broken one is
        # reported now rather than in every worker.
        app = create_app(settings)
    except StateUnavailable as exc:
        _err(f"judge serve: {exc}")
        return 1
    except (sqlite3.Error, OSError) as exc:
        _err(f"cannot open the state database in {settings.data_dir}: {exc}")
        return 1
    store = app.state.service.store
    try:
        sock = bind_socket(args.host, args.port)
    except OSError as exc:
        _err(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}")
        return 1
    configure_logging()
    port = sock.getsockname()[1]
    workers = _workers(args)
    host = f"[{args.host}]" if ":" in args.host else args.host
    auth = (
        "bearer token required" if settings.api_token else "no auth (set JUDGE_API_TOKEN to require a token)"
    )
    _keep_signals_quiet()  # from here a SIGTERM/SIGINT is kept for uvicorn, never lost
    _err(f"judge serve: listening on http://{host}:{port}")
    _err(
        f"judge serve: state {store.describe()}, "
        f"logs in {'the state database' if settings.logs == 'database' else settings.data_dir}, "
        f"transcripts dir {settings.transcripts_dir or 'none (execution_summary paths refused)'}, "
        f"max body {settings.max_body} bytes, {auth}, {workers} worker(s)"
    )
    _err(
        f"judge serve: at most {settings.max_connections} connections per worker; request headers "
        f"within {settings.header_timeout:g}s, bodies within {settings.body_timeout:g}s"
    )
    configure(ConnectionLimits(settings.header_timeout, settings.max_connections or 1))
    try:
        if workers > 1:
            store.close()  # each worker opens its own
            _run_workers(args.config, settings, sock, workers)
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
    return 0


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
