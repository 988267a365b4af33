"""Durable state: Stop rejection counts and last rejections (:class:`StopMemory`) per
session, custom agents, spending (budgets).

:class:`StateStore` is what the gate and the service need; two implementations:

* :class:`judge.state.sqlite.SQLiteStore` — one SQLite file, the embedded default
  (``judge run --state FILE``, ``judge claude-code``, ``judge serve`` without ``--state``);
* :class:`judge.state.postgres.PostgresStore` — a PostgreSQL database shared by service
  replicas on several hosts (``--state postgresql://...``); imported only when chosen.

Data methods are blocking (callers run them in threads). :meth:`StateStore.session_round`
serialises the Stop rounds of one session key across every process using the store.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, Protocol

from judge.errors import StateUnavailable
from judge.state.sqlite import SQLiteStore
from judge.state.stop_memory import StopMemory

#: Kept for callers of the first API (``from judge.state import Store``): the SQLite store.
Store = SQLiteStore

#: What ``--state`` values name a PostgreSQL database.
DATABASE_SCHEMES = ("postgresql://", "postgres://")

__all__ = [
    "DATABASE_SCHEMES",
    "SQLiteStore",
    "StateStore",
    "StateUnavailable",
    "StopMemory",
    "Store",
    "open_store",
]


class StateStore(Protocol):
    """Rejection counts, spending and custom agents, with per-session Stop rounds."""

    def describe(self) -> str:
        """Where the state lives, for messages (never a password)."""
        ...

    def ping(self) -> None:
        """Raise when the store cannot be used now (readiness checks)."""
        ...

    def session_round(self, key: str, wait: float = ...) -> AbstractAsyncContextManager[Any]:
        """Hold the Stop round of ``key``: one at a time across every process and host
        using this store; :class:`judge.state.session_lock.SessionBusy` after ``wait`` seconds."""
        ...

    def rejection_count(self, session_id: str) -> int: ...

    def set_rejection_count(self, session_id: str, count: int) -> None: ...

    def increment_rejection_count(self, session_id: str, by: int = 1) -> int: ...

    def reset(self, session_id: str) -> None:
        """A new loop: forget the session's count and its last rejection."""
        ...

    def stop_loop(self, session_id: str) -> tuple[int, StopMemory | None]:
        """The loop's count and last rejection (None: none yet, or a new loop)."""
        ...

    def stop_memory(self, session_id: str) -> StopMemory | None: ...

    def record_rejection(self, session_id: str, by: int, memory: StopMemory | None) -> int:
        """Add ``by`` to the count and keep ``memory`` as the last rejection, atomically."""
        ...

    def spent(self, key: str) -> float: ...

    def add_spend(self, keys: list[str], usd: float) -> None: ...

    def put_agent(self, name: str, body: dict[str, Any]) -> None: ...

    def get_agent(self, name: str) -> dict[str, Any] | None: ...

    def delete_agent(self, name: str) -> bool: ...

    def list_agents(self) -> list[str]: ...

    def close(self) -> None: ...


def is_database_url(spec: str | Path) -> bool:
    return isinstance(spec, str) and spec.lower().startswith(DATABASE_SCHEMES)


def open_store(spec: str | Path) -> StateStore:
    """The store named by ``spec``: a ``postgresql://`` URL or a SQLite file path.

    Raises :class:`StateUnavailable` (an ``OSError``) with a readable message when it
    cannot be opened; other URL schemes are refused rather than taken for file names.
    """
    if is_database_url(spec):
        from judge.state.postgres import PostgresStore

        return PostgresStore(str(spec))
    text = str(spec)
    if "://" in text:
        scheme = text.split("://", 1)[0]
        raise StateUnavailable(
            f"unsupported state URL scheme {scheme!r}: use postgresql://... or a SQLite file path"
        )
    return SQLiteStore(spec)
