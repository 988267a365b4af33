"""Durable state in one SQLite file (the embedded default :class:`judge.state.StateStore`):
Stop rejection counts and the last rejection (:class:`StopMemory`) per session, custom
agents, spending.

Safe under concurrent processes: WAL mode, a busy timeout, and read-modify-write in
``BEGIN IMMEDIATE`` transactions. A :class:`Store` can be shared between threads and
event-loop executors: each thread keeps one connection (opening one costs about 1 ms of
CPU: open, WAL mapping, pragmas), every call runs in autocommit or its own transaction so
other threads and processes see each write at once, and a forked child opens its own.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from judge.errors import StateUnavailable
from judge.state.migrations import SQLITE_STATE, migrate_sqlite
from judge.state.session_lock import DEFAULT_WAIT_SECONDS, LocalQueue, lock_folder, session_lock
from judge.state.stop_memory import StopMemory

#: How long a write waits for another writer's lock. The store's own transactions take
#: milliseconds; a lock held longer (a backup, an operator's sqlite3 shell) is a failure.
BUSY_SECONDS = 10.0


class SQLiteStore:
    """The state database at ``path`` (created on first use)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        # Private from the start (SQLite gives its -wal/-shm files the database's mode).
        os.close(os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600))
        self._local = threading.local()
        self._opened: list[sqlite3.Connection] = []
        self._opened_lock = threading.Lock()
        self._queue = LocalQueue()
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            migrate_sqlite(db, SQLITE_STATE, f"the state database {self.path}")

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection; any SQLite error in the block (a lock another process
        holds past :data:`BUSY_SECONDS`, a damaged file) is a :class:`StateUnavailable`."""
        try:
            db: sqlite3.Connection | None = getattr(self._local, "db", None)
            if db is None or getattr(self._local, "pid", None) != os.getpid():
                # check_same_thread=False only so close() can run on another thread.
                db = sqlite3.connect(
                    self.path, timeout=BUSY_SECONDS, isolation_level=None, check_same_thread=False
                )
                db.execute(f"PRAGMA busy_timeout={int(BUSY_SECONDS * 1000)}")
                db.execute("PRAGMA synchronous=NORMAL")  # with WAL: durable across process crashes
                self._local.db, self._local.pid = db, os.getpid()
                with self._opened_lock:
                    self._opened.append(db)
            yield db
        except sqlite3.Error as exc:
            raise StateUnavailable(f"cannot use the state database {self.path}: {exc}") from None

    def describe(self) -> str:
        return str(self.path)

    def ping(self) -> None:
        with self._connect() as db:
            db.execute("SELECT 1").fetchone()

    @asynccontextmanager
    async def session_round(self, key: str, wait: float = DEFAULT_WAIT_SECONDS) -> AsyncIterator[None]:
        """Hold ``key``'s Stop round: first in this process (no polling), then across
        processes with a ``flock`` next to the database (:mod:`judge.state.session_lock`)."""
        async with self._queue.hold(key, wait) as left, session_lock(lock_folder(self.path), key, left):
            yield

    def close(self) -> None:
        """Close every thread's connection (when no call is running); later calls reopen."""
        with self._opened_lock:
            opened, self._opened = self._opened, []
        for db in opened:
            db.close()
        self._local = threading.local()

    # -- Stop rejection counts ----------------------------------------------------

    def rejection_count(self, session_id: str) -> int:
        with self._connect() as db:
            row = db.execute("SELECT count FROM rejections WHERE session_id = ?", (session_id,)).fetchone()
        return int(row[0]) if row else 0

    def set_rejection_count(self, session_id: str, count: int) -> None:
        with self._connect() as db:
            if count <= 0:
                db.execute("DELETE FROM rejections WHERE session_id = ?", (session_id,))
            else:
                db.execute(
                    "INSERT INTO rejections (session_id, count, updated_at) VALUES (?, ?, ?) "
                    "ON CONFLICT(session_id) DO UPDATE SET count = excluded.count, "
                    "updated_at = excluded.updated_at",
                    (session_id, count, time.time()),
                )

    def increment_rejection_count(self, session_id: str, by: int = 1) -> int:
        """Atomically add ``by`` to the session's count (one write transaction); the new count."""
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                row = db.execute(
                    "INSERT INTO rejections (session_id, count, updated_at) VALUES (?, ?, ?) "
                    "ON CONFLICT(session_id) DO UPDATE SET count = count + excluded.count, "
                    "updated_at = excluded.updated_at RETURNING count",
                    (session_id, by, time.time()),
                ).fetchone()
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        return int(row[0])

    def reset(self, session_id: str) -> None:
        """A new loop: the count and the last rejection are forgotten."""
        self.set_rejection_count(session_id, 0)

    # -- the last rejection of a loop (stalled loops), kept in the count's row -------------

    def stop_loop(self, session_id: str) -> tuple[int, StopMemory | None]:
        """The loop's count and last rejection (None: none yet), in one read."""
        with self._connect() as db:
            row = db.execute(
                "SELECT count, answer, reason, repeats FROM rejections WHERE session_id = ?", (session_id,)
            ).fetchone()
        if row is None:
            return 0, None
        memory = StopMemory(str(row[1]), str(row[2]), int(row[3])) if row[1] is not None else None
        return int(row[0]), memory

    def stop_memory(self, session_id: str) -> StopMemory | None:
        return self.stop_loop(session_id)[1]

    def record_rejection(self, session_id: str, by: int, memory: StopMemory | None) -> int:
        """Atomically add ``by`` to the count and keep ``memory`` as the loop's last
        rejection (one write); the new count."""
        answer, reason, repeats = memory if memory is not None else (None, None, 0)
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")  # (the commit ends the RETURNING statement too)
            try:
                row = db.execute(
                    "INSERT INTO rejections (session_id, count, updated_at, answer, reason, repeats) "
                    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(session_id) DO UPDATE SET "
                    "count = count + excluded.count, updated_at = excluded.updated_at, "
                    "answer = excluded.answer, reason = excluded.reason, repeats = excluded.repeats "
                    "RETURNING count",
                    (session_id, by, time.time(), answer, reason, repeats),
                ).fetchone()
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        return int(row[0])

    # -- spending (budgets) -------------------------------------------------------------

    def spent(self, key: str) -> float:
        """US dollars recorded under ``key`` (``session:<id>``, ``day:<YYYY-MM-DD>``)."""
        with self._connect() as db:
            row = db.execute("SELECT usd FROM spend WHERE key = ?", (key,)).fetchone()
        return float(row[0]) if row else 0.0

    def add_spend(self, keys: list[str], usd: float) -> None:
        """Add ``usd`` to every key, atomically (one write transaction)."""
        if usd <= 0 or not keys:
            return
        now = time.time()
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                for key in keys:
                    db.execute(
                        "INSERT INTO spend (key, usd, updated_at) VALUES (?, ?, ?) "
                        "ON CONFLICT(key) DO UPDATE SET usd = usd + excluded.usd, "
                        "updated_at = excluded.updated_at",
                        (key, usd, now),
                    )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    # -- custom agents -----------------------------------------------------------------

    def put_agent(self, name: str, body: dict[str, Any]) -> None:
        with self._connect() as db:
            db.execute(
                "INSERT INTO agents (name, body, updated_at) VALUES (?, ?, ?) "
                "ON CONFLICT(name) DO UPDATE SET body = excluded.body, "
                "updated_at = excluded.updated_at",
                (name, json.dumps(body), time.time()),
            )

    def get_agent(self, name: str) -> dict[str, Any] | None:
        with self._connect() as db:
            row = db.execute("SELECT body FROM agents WHERE name = ?", (name,)).fetchone()
        if row is None:
            return None
        body: dict[str, Any] = json.loads(row[0])
        return body

    def delete_agent(self, name: str) -> bool:
        with self._connect() as db:
            cur = db.execute("DELETE FROM agents WHERE name = ?", (name,))
            return cur.rowcount > 0

    def list_agents(self) -> list[str]:
        with self._connect() as db:
            return [r[0] for r in db.execute("SELECT name FROM agents ORDER BY name")]
