"""Service state in PostgreSQL, shared by service replicas on several hosts.

``judge serve --state postgresql://user@host/db`` (or ``judge run --state ...``). Opening
checks the connection and runs the schema migrations (:mod:`judge.state.migrations`);
a bad URL, refused login or unreachable server is a :class:`StateUnavailable` with
libpq's own message, before the service listens.

Stop rounds (:meth:`PostgresStore.session_round`): a pooled connection opens a
transaction and takes the session's transaction-scoped advisory lock
(``pg_advisory_xact_lock``), waiting at most the round's ``wait`` (``lock_timeout``).
The count is read, the hooks run and the new count is written on that same connection,
inside that transaction; the commit releases the lock. So two replicas never judge one
session's Stops side by side, and a replica that dies mid-round loses its connection,
which rolls the round back and frees the lock. Rounds of one session in one process
queue in memory first (:class:`judge.state.session_lock.LocalQueue`).

Outside a round every call takes a pooled connection in autocommit mode. Each in-flight
Stop round holds one connection for the length of its judgement: the pool (default
:data:`DEFAULT_POOL_SIZE`, ``JUDGE_STATE_POOL_SIZE``) bounds the concurrent rounds per
process, and a request that waits :data:`POOL_WAIT` seconds for a connection fails with
:class:`StateUnavailable` (the service then applies the hooks' ``failMode``).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractContextManager, asynccontextmanager, contextmanager
from contextvars import ContextVar
from typing import Any, TypeAlias

from judge.errors import StateUnavailable
from judge.redact import redact_url
from judge.state.migrations import migrate
from judge.state.session_lock import DEFAULT_WAIT_SECONDS, LocalQueue, SessionBusy
from judge.state.stop_memory import StopMemory

try:
    import psycopg
    from psycopg.errors import LockNotAvailable
    from psycopg.types.json import Json
    from psycopg_pool import ConnectionPool
except ImportError as _missing:  # pragma: no cover - depends on the install
    raise StateUnavailable(
        f"--state postgresql://... needs psycopg 3 and psycopg-pool ({_missing}); "
        "install them with: pip install 'judge-hooks[postgres]' (in a clone of judge: "
        "pip install -e '.[postgres]')"
    ) from None

POOL_SIZE_ENV = "JUDGE_STATE_POOL_SIZE"
DEFAULT_POOL_SIZE = 20
MIN_POOL_SIZE = 4
#: Seconds to connect to the server (libpq's connect_timeout).
CONNECT_TIMEOUT = 10
#: Longest wait for a free pooled connection while the database answers...
POOL_WAIT = 30.0
#: ...and once a call failed to reach it (until one succeeds again): requests are then
#: answered per failMode at once instead of each waiting for the outage to end.
DOWN_WAIT = 1.0
#: Longest wait of a readiness check (``GET /readyz``).
PING_WAIT = 2.0
#: TCP keepalives: a replica's connection to a vanished host is noticed in about a minute.
_CONNECTION_KWARGS: dict[str, Any] = {
    "autocommit": True,
    "connect_timeout": CONNECT_TIMEOUT,
    "application_name": "judge",
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
}

Conn: TypeAlias = "psycopg.Connection[Any]"
#: The connection of the Stop round the current task holds, per store.
_ROUND: ContextVar[tuple[int, Conn] | None] = ContextVar("judge_state_round", default=None)


def lock_id(key: str) -> int:
    """The advisory lock key of a session key: 64 bits of its SHA-256, namespaced."""
    digest = hashlib.sha256(b"judge-stop-round\0" + key.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def pool_size() -> int:
    raw = os.environ.get(POOL_SIZE_ENV, "").strip()
    if not raw:
        return DEFAULT_POOL_SIZE
    try:
        size = int(raw)
    except ValueError:
        size = 0
    if size < 1:
        raise StateUnavailable(f"{POOL_SIZE_ENV} must be a positive number of connections, got {raw!r}")
    return size


class PostgresStore:
    """The state in the PostgreSQL database at ``url``, through a connection pool."""

    def __init__(self, url: str, size: int | None = None) -> None:
        self.url = url
        self.name = redact_url(url)
        size = size or pool_size()
        try:
            with psycopg.connect(url, **_CONNECTION_KWARGS) as conn:
                migrate(conn)
        except psycopg.Error as exc:
            raise StateUnavailable(f"cannot use the state database {self.name}: {_message(exc)}") from None
        self.pool = ConnectionPool(
            url,
            # Kept open (opening one costs a server process: tens of ms, more under load).
            min_size=min(MIN_POOL_SIZE, size),
            max_size=size,
            kwargs=_CONNECTION_KWARGS,
            timeout=POOL_WAIT,
            check=ConnectionPool.check_connection,
            name="judge-state",
            open=False,
        )
        self.pool.open(wait=False)
        self._queue = LocalQueue()
        #: The last call could not reach the database (shortens the pool wait).
        self.down = False

    def describe(self) -> str:
        return self.name

    def close(self) -> None:
        self.pool.close()

    # -- connections ------------------------------------------------------------------

    @contextmanager
    def _conn(self, wait: float | None = None) -> Iterator[Conn]:
        """The current round's connection, else a pooled one (autocommit)."""
        held = _ROUND.get()
        try:
            if held is not None and held[0] == id(self):
                yield held[1]
            else:
                with self.pool.connection(timeout=wait or self._wait()) as conn:
                    yield conn
        except psycopg.Error as exc:  # the pool's errors (PoolTimeout) are psycopg errors too
            raise self._unavailable(exc) from None
        self.down = False

    def connection(self) -> AbstractContextManager[Conn]:
        """A connection for other tables of this database (:mod:`judge.logs.table_postgres`):
        the current Stop round's, else a pooled one in autocommit mode; errors become
        :class:`StateUnavailable`."""
        return self._conn()

    def _wait(self) -> float:
        return DOWN_WAIT if self.down else POOL_WAIT

    def _unavailable(self, exc: psycopg.Error, what: str = "") -> StateUnavailable:
        if isinstance(exc, psycopg.OperationalError):  # unreachable, dropped, pool timeout
            self.down = True
        return StateUnavailable(f"state database {self.name}: {what}{_message(exc)}")

    def ping(self) -> None:
        with self._conn(PING_WAIT) as conn:
            conn.execute("SELECT 1").fetchone()

    # -- Stop rounds ----------------------------------------------------------------------

    @asynccontextmanager
    async def session_round(self, key: str, wait: float = DEFAULT_WAIT_SECONDS) -> AsyncIterator[None]:
        async with self._queue.hold(key, wait) as left:
            conn = await _shielded(asyncio.to_thread(self._begin_round, key, left), self._end_round)
            token = _ROUND.set((id(self), conn))
            ok = False
            try:
                yield
                ok = True
            finally:
                _ROUND.reset(token)
                await asyncio.shield(asyncio.to_thread(self._end_round, conn, ok))

    def _begin_round(self, key: str, wait: float) -> Conn:
        try:
            conn = self.pool.getconn(timeout=self._wait())
        except psycopg.Error as exc:
            raise self._unavailable(exc) from None
        try:
            conn.autocommit = False
            # lock_timeout bounds this wait (and any row lock the round waits for later).
            conn.execute("SELECT set_config('lock_timeout', %s, true)", (f"{max(int(wait * 1000), 1)}ms",))
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_id(key),))
        except LockNotAvailable:
            self._end_round(conn, False)
            raise SessionBusy(
                16, f"another Stop of session {key!r} is still being judged (waited {wait:g} s)"
            ) from None
        except psycopg.Error as exc:
            self._end_round(conn, False)
            raise self._unavailable(exc) from None
        self.down = False
        return conn

    def _end_round(self, conn: Conn, commit: bool) -> None:
        """Commit (or roll back) the round, which releases its lock; the connection goes
        back to the pool (a broken one is discarded there)."""
        try:
            if commit:
                conn.commit()
            else:
                conn.rollback()
            conn.autocommit = True
        except psycopg.Error as exc:
            if commit:
                raise self._unavailable(exc, "the Stop round could not be saved: ") from None
        finally:
            self.pool.putconn(conn)

    # -- Stop rejection counts ----------------------------------------------------

    def rejection_count(self, session_id: str) -> int:
        with self._conn() as conn:
            row = conn.execute(
                "SELECT count FROM judge_rejections WHERE session_key = %s", (session_id,)
            ).fetchone()
        return int(row[0]) if row else 0

    def set_rejection_count(self, session_id: str, count: int) -> None:
        with self._conn() as conn:
            if count <= 0:
                conn.execute("DELETE FROM judge_rejections WHERE session_key = %s", (session_id,))
            else:
                conn.execute(
                    "INSERT INTO judge_rejections (session_key, count) VALUES (%s, %s) "
                    "ON CONFLICT (session_key) DO UPDATE SET count = EXCLUDED.count, updated_at = now()",
                    (session_id, count),
                )

    def increment_rejection_count(self, session_id: str, by: int = 1) -> int:
        """Atomically add ``by`` (one statement); the new count."""
        with self._conn() as conn:
            row = conn.execute(
                "INSERT INTO judge_rejections (session_key, count) VALUES (%s, %s) "
                "ON CONFLICT (session_key) DO UPDATE SET count = judge_rejections.count + EXCLUDED.count, "
                "updated_at = now() RETURNING count",
                (session_id, by),
            ).fetchone()
        assert row is not None
        return int(row[0])

    def reset(self, session_id: str) -> None:
        """A new loop: the count and the last rejection are forgotten."""
        self.set_rejection_count(session_id, 0)

    # -- the last rejection of a loop (stalled loops), kept in the count's row -------------

    def stop_loop(self, session_id: str) -> tuple[int, StopMemory | None]:
        """The loop's count and last rejection (None: none yet), in one read."""
        with self._conn() as conn:
            row = conn.execute(
                "SELECT count, answer, reason, repeats FROM judge_rejections WHERE session_key = %s",
                (session_id,),
            ).fetchone()
        if row is None:
            return 0, None
        memory = StopMemory(str(row[1]), str(row[2]), int(row[3])) if row[1] is not None else None
        return int(row[0]), memory

    def stop_memory(self, session_id: str) -> StopMemory | None:
        return self.stop_loop(session_id)[1]

    def record_rejection(self, session_id: str, by: int, memory: StopMemory | None) -> int:
        """Atomically add ``by`` to the count and keep ``memory`` (one statement); the new count."""
        answer, reason, repeats = memory if memory is not None else (None, None, 0)
        with self._conn() as conn:
            row = conn.execute(
                "INSERT INTO judge_rejections (session_key, count, answer, reason, repeats) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (session_key) DO UPDATE SET "
                "count = judge_rejections.count + EXCLUDED.count, answer = EXCLUDED.answer, "
                "reason = EXCLUDED.reason, repeats = EXCLUDED.repeats, updated_at = now() RETURNING count",
                (session_id, by, answer, reason, repeats),
            ).fetchone()
        assert row is not None
        return int(row[0])

    # -- spending (budgets) -------------------------------------------------------------

    def spent(self, key: str) -> float:
        with self._conn() as conn:
            row = conn.execute("SELECT usd FROM judge_spend WHERE key = %s", (key,)).fetchone()
        return float(row[0]) if row else 0.0

    def add_spend(self, keys: list[str], usd: float) -> None:
        """Add ``usd`` to every key in one statement (atomic)."""
        if usd <= 0 or not keys:
            return
        with self._conn() as conn:
            conn.execute(
                "INSERT INTO judge_spend (key, usd) SELECT k, %s FROM unnest(%s::text[]) AS k "
                "ON CONFLICT (key) DO UPDATE SET usd = judge_spend.usd + EXCLUDED.usd, updated_at = now()",
                (usd, sorted(set(keys))),
            )

    # -- custom agents -----------------------------------------------------------------

    def put_agent(self, name: str, body: dict[str, Any]) -> None:
        with self._conn() as conn:
            conn.execute(
                "INSERT INTO judge_agents (name, body) VALUES (%s, %s) "
                "ON CONFLICT (name) DO UPDATE SET body = EXCLUDED.body, updated_at = now()",
                (name, Json(body)),
            )

    def get_agent(self, name: str) -> dict[str, Any] | None:
        with self._conn() as conn:
            row = conn.execute("SELECT body FROM judge_agents WHERE name = %s", (name,)).fetchone()
        if row is None:
            return None
        body: dict[str, Any] = row[0]
        return body

    def delete_agent(self, name: str) -> bool:
        with self._conn() as conn:
            cur = conn.execute("DELETE FROM judge_agents WHERE name = %s", (name,))
            return bool(cur.rowcount > 0)

    def list_agents(self) -> list[str]:
        with self._conn() as conn:
            return [str(r[0]) for r in conn.execute("SELECT name FROM judge_agents ORDER BY name")]


def _message(exc: BaseException) -> str:
    """libpq's message on one line (it spreads some over several)."""
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


async def _shielded(work: Any, undo: Any) -> Conn:
    """Await ``work`` (a coroutine returning a round's connection); if the caller is
    cancelled meanwhile, the round it still gets is ended (rolled back) when it comes."""
    future = asyncio.ensure_future(work)
    try:
        conn: Conn = await asyncio.shield(future)
    except asyncio.CancelledError:

        def end(done: asyncio.Future[Conn]) -> None:
            if not done.cancelled() and done.exception() is None:
                undo(done.result(), False)

        future.add_done_callback(end)
        raise
    return conn
