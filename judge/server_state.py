"""The service's state store and what a hook request gets when the store fails.

``--state`` names the store (a ``postgresql://`` URL or a SQLite file); without it the
SQLite file ``state.sqlite3`` of the data dir. When the store cannot be used in the middle
of a hook request (the database went down, the pool ran dry, another replica held the
session's Stop round for longer than the wait), the request is answered per the selected
hooks' ``failMode`` — the same rule as any other hook error — never with a 500.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from judge.config import STOP_EVENTS
from judge.decision import Decision, HookOutcome
from judge.engine import Engine
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


def fail_mode_decision(engine: Engine, event: str, context: dict[str, Any], problem: str) -> Decision:
    """Every selected hook failed with ``problem``; each applies its ``failMode``."""
    outcomes = []
    for level, index, hook in engine.selected_hooks(event, context):
        blocks = hook.fail_mode_for(event) == "block"
        outcomes.append(
            HookOutcome(
                level="agent" if level == "agent" else "custom",
                index=index,
                type=hook.type,
                decision="block" if blocks else "allow",
                reason=f"Hook error: {problem}" if blocks else None,
                error=problem,
                mode="shadow" if hook.mode == "shadow" else None,
            )
        )
    blocking = [o for o in outcomes if o.effective and o.decision == "block"]
    if not blocking:
        return Decision(event=event, decision="allow", hooks=outcomes)
    count = context.get("stop_rejection_count") if event in STOP_EVENTS else 0
    return Decision(
        event=event,
        decision="block",
        reason=f"Hook error: {problem}",
        rejectionCount=count if isinstance(count, int) and count >= 0 else 0,
        hooks=outcomes,
    )
