"""The logs as rows of the PostgreSQL state database (table ``judge_log``, migration 2).

One row per record: its log (``kind``), when it was written, its session (for queries)
and the record itself as ``JSON`` (kept as written). Rows written during a Stop round go
in with the round's transaction, so a session's count and its summary commit together.

The live-view log (``decisions``, written in batches by :mod:`judge.logs.buffer`) is
pruned as it grows: every :data:`PRUNE_EVERY`-th decision deletes the decisions older
than :data:`DECISIONS_KEPT`. The audit logs are the record and are never deleted by
judge (see docs/deployment.md for retention).
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from judge.logs.table import PAGE, session_of
from judge.state.postgres import PostgresStore

#: The live view's log keeps this much history in the database.
DECISIONS_KEPT = timedelta(days=7)
#: How often (in decisions written) the old ones are deleted.
PRUNE_EVERY = 1000
#: Logs whose commits do not wait for the WAL flush (``synchronous_commit`` off for that
#: transaction only): the live view's, like its file, is for watching, not the record; a
#: database crash may lose its last fraction of a second, never corrupt it.
UNFLUSHED = frozenset({"decisions"})
#: Longest session id stored in the indexed column (the record keeps it whole).
SESSION_CHARS = 256
#: How long a row waits before a settled ``read_log`` returns it: far more than the
#: moment between a round's last insert and its commit (a replica stalled for longer
#: between the two, e.g. a paused VM, could still be passed over).
EXPORT_LAG = timedelta(seconds=60)


# Rows in the order given (WITH ORDINALITY): ids grow in that order.
_ROWS = "FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS r(session_id, record, n)"
_INSERT = (
    "INSERT INTO judge_log (kind, session_id, record, logged_at) "
    f"SELECT %s, r.session_id, r.record::json, clock_timestamp() {_ROWS} ORDER BY r.n RETURNING id"
)
# One statement (its own transaction in autocommit mode) that turns synchronous_commit off
# for itself: set_config(..., true) lasts until the end of the transaction, its commit included.
_INSERT_UNFLUSHED = (
    "INSERT INTO judge_log (kind, session_id, record, logged_at) "
    f"SELECT %s, r.session_id, r.record::json, clock_timestamp() {_ROWS}, "
    "(SELECT set_config('synchronous_commit', 'off', true)) AS unflushed ORDER BY r.n RETURNING id"
)


def _dumps(record: Any) -> str:
    return json.dumps(record, ensure_ascii=True, default=str)


def _indexed_session(record: dict[str, Any]) -> str | None:
    session = session_of(record)
    return session[:SESSION_CHARS] if session is not None else None


class PostgresLogTable:
    """The logs of the service replicas sharing ``store``'s database."""

    def __init__(self, store: PostgresStore) -> None:
        self.store = store

    def describe(self) -> str:
        return f"table judge_log of {self.store.describe()}"

    def append_log(self, kind: str, record: dict[str, Any]) -> int:
        return self.append_many(kind, [record])[0]

    def append_many(self, kind: str, records: list[dict[str, Any]]) -> list[int]:
        if not records:
            return []
        sessions = [_indexed_session(r) for r in records]
        texts = [_dumps(r) for r in records]
        with self.store.connection() as conn:
            unflushed = kind in UNFLUSHED and not conn.info.transaction_status  # its own transaction
            insert = _INSERT_UNFLUSHED if unflushed else _INSERT
            ids = sorted(int(r[0]) for r in conn.execute(insert, (kind, sessions, texts)).fetchall())
            if kind == "decisions" and (ids[0] - 1) // PRUNE_EVERY != ids[-1] // PRUNE_EVERY:
                conn.execute(
                    "DELETE FROM judge_log WHERE kind = 'decisions' AND logged_at < now() - %s",
                    (DECISIONS_KEPT,),
                )
        return ids

    def read_log(
        self,
        kind: str,
        *,
        after: int = 0,
        limit: int = PAGE,
        session: str | None = None,
        settled: bool = False,
    ) -> list[tuple[int, dict[str, Any]]]:
        query = "SELECT id, record FROM judge_log WHERE kind = %s AND id > %s"
        params: list[Any] = [kind, after]
        if settled:
            # Ids are taken at insert and a Stop round commits its records at its end, so a
            # row of the last moments may still get a smaller id than one already visible:
            # the rows from the first id inserted in the last EXPORT_LAG on wait for a later
            # read, so an export that continues after the last id it saw misses none.
            query += (
                " AND id < coalesce((SELECT min(id) FROM judge_log WHERE kind = %s"
                " AND logged_at >= clock_timestamp() - %s), 9223372036854775807)"
            )
            params += [kind, EXPORT_LAG]
        if session is not None:
            query += " AND session_id = %s"
            params.append(session[:SESSION_CHARS])
        query += " ORDER BY id LIMIT %s"
        params.append(limit)
        with self.store.connection() as conn:
            rows = conn.execute(query, params).fetchall()
        return [(int(r[0]), r[1]) for r in rows if isinstance(r[1], dict)]

    def recent_log(self, kind: str, limit: int) -> list[dict[str, Any]]:
        with self.store.connection() as conn:
            rows = conn.execute(
                "SELECT record FROM judge_log WHERE kind = %s ORDER BY id DESC LIMIT %s", (kind, limit)
            ).fetchall()
        return [r[0] for r in reversed(rows) if isinstance(r[0], dict)]
