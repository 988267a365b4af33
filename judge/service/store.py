"""The service's state store and log table.

``--state`` names the store (a ``postgresql://`` URL or a SQLite file); without it the
SQLite file ``state.sqlite3`` of the data dir. When the store cannot be used in the middle
of a hook request (the database went down, the pool ran dry, another replica held the
session's Stop round for longer than the wait), the request is answered per the selected
hooks' ``failMode`` (:func:`judge.hooks.gate.fail_mode_decision`) — the same rule as any
other hook error — never with a 500.
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

from judge.errors import StateUnavailable
from judge.logs.table import LogTable
from judge.state import StateStore, open_store
from judge.state.sqlite import SQLiteStore

#: Name of the SQLite state database inside the data dir (the default store).
STATE_DB = "state.sqlite3"
#: Decisions the live view reads from the database (the file's tail holds about as many).
RECENT_ROWS = 5000
#: ``--logs`` values.
LOG_PLACES = ("files", "database")


def state_spec(state: str | None, data_dir: Path) -> str | Path:
    return state if state else data_dir / STATE_DB


def open_service_store(state: str | None, data_dir: Path) -> StateStore:
    return open_store(state_spec(state, data_dir))


def open_log_table(logs: str, store: StateStore) -> LogTable | None:
    """The table the logs go to (``--logs database``), or None for the JSONL files."""
    if logs == "files":
        return None
    if logs != "database":
        raise StateUnavailable(f"--logs must be one of {', '.join(LOG_PLACES)}, got {logs!r}")
    if isinstance(store, SQLiteStore):
        raise StateUnavailable(
            f"--logs database keeps the logs in a PostgreSQL state database; the state is "
            f"{store.describe()} (give --state postgresql://... or --logs files)"
        )
    from judge.logs.table_postgres import PostgresLogTable
    from judge.state.postgres import PostgresStore

    return PostgresLogTable(cast(PostgresStore, store))
