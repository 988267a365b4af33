"""The flags of ``judge serve`` (the service itself is :mod:`judge.service.run`, imported only
when it runs)."""

from __future__ import annotations

from typing import Any


def add_serve_parser(sub: Any, run: Any) -> None:
    """``judge serve [--config F] [--host H] [--port P] [--state URL] [--logs WHERE] ...``."""
    p = sub.add_parser("serve", help="run the HTTP gate service")
    p.add_argument("--config", help="agent-level hook configuration (YAML or JSON)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080)
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
    p.add_argument("--max-body", type=int, default=None, help="maximum request body in bytes")
    p.add_argument("--max-connections", type=int, help="connections per worker (default: from ulimit -n)")
    p.add_argument("--header-timeout", type=float, help="seconds to send request headers (default 10)")
    p.add_argument("--body-timeout", type=float, help="seconds to send the request body (default 60)")
    p.set_defaults(func=run)
