"""``judge serve``: the flags turned into :class:`~judge.service.endpoints.ServerSettings`,
the refusals (bad flags, an invalid configuration, an open host without a token, a state
database that cannot be opened, a port that cannot be bound), then the service
(:func:`judge.service.run.run_service`, imported only when it runs). Exit 1 for any
refusal, 0 after a graceful stop.
"""

from __future__ import annotations

import argparse
import ipaddress
import math
import os
import sqlite3
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judge.service.endpoints import ServerSettings


def _err(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def add_serve_parser(sub: Any, run: Any) -> None:
    """``judge serve [--config F] [--host H] [--port P] [--state URL] [--logs WHERE] ...``."""
    p = sub.add_parser("serve", help="run the HTTP gate service")
    p.add_argument("--config", help="agent-level hook configuration (YAML or JSON)")
    p.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (beyond loopback only with JUDGE_API_TOKEN)"
    )
    p.add_argument("--port", type=int, default=8080, help="port to listen on (0: a free one)")
    p.add_argument("--data-dir", default="data", help="state DB and audit logs (default: ./data)")
    p.add_argument("--transcripts-dir", help="execution_summary paths must be inside this folder")
    p.add_argument("--state", help="postgresql://... shared by replicas (default: SQLite in --data-dir)")
    p.add_argument(
        "--logs",
        choices=("files", "database"),
        help="audit, session, shadow and decision logs: JSONL in --data-dir or the PostgreSQL "
        "state's tables (default: database with --state postgresql://..., else files)",
    )
    p.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    p.add_argument(
        "--max-body", type=int, default=None, help="maximum request body in bytes (default: 10 MiB)"
    )
    p.add_argument(
        "--max-transcript-bytes",
        type=int,
        default=None,
        help="largest execution_summary file copied for a request (default 256 MiB)",
    )
    p.add_argument("--max-connections", type=int, help="connections per worker (default: from ulimit -n)")
    p.add_argument("--header-timeout", type=float, help="seconds to send request headers (default 10)")
    p.add_argument("--body-timeout", type=float, help="seconds to send the request body (default 60)")
    p.add_argument(
        "--write-timeout",
        type=float,
        help="seconds a client may leave an answer unread before its connection is dropped (default 30)",
    )
    p.set_defaults(func=run)


def _workers(args: argparse.Namespace) -> int:
    workers = getattr(args, "workers", None)
    return 1 if workers is None else int(workers)


def settings_from_args(args: argparse.Namespace) -> ServerSettings:
    """Validate the flags; raise ValueError/ConfigError with a readable message."""
    from judge.config import Config
    from judge.service.app import DEFAULT_MAX_BODY, TOKEN_ENV, ServerSettings
    from judge.service.limits import DEFAULT_BODY_TIMEOUT, DEFAULT_HEADER_TIMEOUT, DEFAULT_WRITE_TIMEOUT
    from judge.validation import load_checked_config

    config = load_checked_config(args.config, on_warning=_err) if args.config else Config()
    if not 0 <= args.port <= 65535:
        raise ValueError(f"--port must be between 0 and 65535, got {args.port}")
    max_body = args.max_body if args.max_body is not None else DEFAULT_MAX_BODY
    if max_body < 1:
        raise ValueError(f"--max-body must be a positive number of bytes, got {max_body}")
    from judge.service.files import DEFAULT_MAX_TRANSCRIPT_BYTES

    max_transcript = getattr(args, "max_transcript_bytes", None)
    max_transcript = DEFAULT_MAX_TRANSCRIPT_BYTES if max_transcript is None else max_transcript
    if max_transcript < 1:
        raise ValueError(f"--max-transcript-bytes must be a positive number of bytes, got {max_transcript}")
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
    defaults = {
        "header_timeout": DEFAULT_HEADER_TIMEOUT,
        "body_timeout": DEFAULT_BODY_TIMEOUT,
        "write_timeout": DEFAULT_WRITE_TIMEOUT,
    }
    for flag, default in defaults.items():
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
        max_transcript_bytes=max_transcript,
        api_token=os.environ.get(TOKEN_ENV) or None,
        max_connections=_max_connections(getattr(args, "max_connections", None)),
        state=state,
        logs=_log_place(getattr(args, "logs", None), state),
        **timeouts,
    )


def _log_place(given: str | None, state: str | None) -> str:
    """``--logs``: as given, else "database" with a PostgreSQL state and "files" without."""
    from judge.service.store import LOG_PLACES
    from judge.state import is_database_url

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
    from judge.service.limits import default_max_connections, max_connections_allowed, raise_fd_limit

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
    from judge.errors import ConfigError, StateUnavailable
    from judge.service.app import TOKEN_ENV, create_app
    from judge.service.run import bind_socket, run_service

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
    try:
        sock = bind_socket(args.host, args.port)
    except OSError as exc:
        app.state.service.store.close()
        _err(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}")
        return 1
    run_service(settings, app, sock, _workers(args), args.config, args.host)
    return 0
