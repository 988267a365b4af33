"""Schema migrations of judge's databases: the PostgreSQL state database and every
SQLite file (the state file, the eval cache).

**PostgreSQL.** The table ``judge_schema_version`` holds one row per applied migration (version,
description, when). Every service process runs :func:`migrate` when it opens the
database. A current schema costs one read (no DDL, so a user without ``CREATE`` can run
judge); an older one is upgraded under a transaction-scoped advisory lock, so replicas
starting together apply each migration exactly once, and in one transaction, so a failed
upgrade leaves the previous schema intact. A database whose version is newer than this judge knows is
refused (an older replica must not write into a schema it does not understand).

**SQLite.** Each file's version is SQLite's own ``PRAGMA user_version``; :func:`migrate_sqlite`
applies the missing entries of that file's list (:data:`SQLITE_STATE`, :data:`SQLITE_CACHE`)
in one ``BEGIN IMMEDIATE`` transaction, so concurrent processes apply each exactly once. A
file from before versions (``user_version`` 0, tables made with ``IF NOT EXISTS``) is
brought to version 1 without losing a row; a file newer than this judge knows is refused
with :class:`~judge.errors.StateUnavailable`, never misread.

Migrations are append-only: a released one is never edited; a change of schema is a new
entry at the end of its list.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from judge.errors import StateUnavailable

VERSION_TABLE = "judge_schema_version"
#: Advisory lock key held while migrating ("judge-migrate" in ASCII, truncated to 63 bits).
MIGRATION_LOCK = int.from_bytes(b"judgemig", "big") & 0x7FFF_FFFF_FFFF_FFFF


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    statements: tuple[str, ...]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "Stop rejection counts, custom agents, spending",
        (
            """CREATE TABLE judge_rejections (
                session_key TEXT PRIMARY KEY,
                count INTEGER NOT NULL,
                updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
            )""",
            """CREATE TABLE judge_agents (
                name TEXT PRIMARY KEY,
                body JSON NOT NULL,
                updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
            )""",
            """CREATE TABLE judge_spend (
                key TEXT PRIMARY KEY,
                usd DOUBLE PRECISION NOT NULL,
                updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
            )""",
        ),
    ),
    Migration(
        2,
        "The service's logs as rows: audit, session summaries, shadow verdicts, decisions",
        (
            # JSON, not JSONB: a record is kept as written (JSONB refuses \u0000 in strings).
            """CREATE TABLE judge_log (
                id BIGSERIAL PRIMARY KEY,
                kind TEXT NOT NULL,
                logged_at TIMESTAMPTZ NOT NULL DEFAULT now(),
                session_id TEXT,
                record JSON NOT NULL
            )""",
            "CREATE INDEX judge_log_kind_id ON judge_log (kind, id)",
            "CREATE INDEX judge_log_kind_session ON judge_log (kind, session_id, id)",
            "CREATE INDEX judge_log_kind_logged_at ON judge_log (kind, logged_at)",
        ),
    ),
    Migration(
        3,
        "Each Stop loop's last rejection (digests) beside its count, to end stalled loops",
        (
            "ALTER TABLE judge_rejections ADD COLUMN answer TEXT, ADD COLUMN reason TEXT, "
            "ADD COLUMN repeats INTEGER NOT NULL DEFAULT 0",
        ),
    ),
)


def latest_version(migrations: tuple[Migration, ...] = MIGRATIONS) -> int:
    return migrations[-1].version if migrations else 0


def schema_version(conn: Any) -> int:
    """The version recorded in the database (0: no version table yet)."""
    row = conn.execute("SELECT to_regclass(%s)", (VERSION_TABLE,)).fetchone()
    if row is None or row[0] is None:
        return 0
    found = conn.execute(f"SELECT coalesce(max(version), 0) FROM {VERSION_TABLE}").fetchone()
    return int(found[0]) if found else 0


def migrate(conn: Any, migrations: tuple[Migration, ...] = MIGRATIONS) -> list[int]:
    """Bring the database on ``conn`` (a psycopg connection) to the latest version; the
    versions applied now (empty when it was up to date)."""
    latest = latest_version(migrations)
    applied: list[int] = []
    current = schema_version(conn)
    if current == latest:
        # Up to date: nothing to lock or create, so a user with only SELECT, INSERT, UPDATE
        # and DELETE on the tables (no CREATE) can use the database.
        return applied
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {VERSION_TABLE} ("
            "version INTEGER PRIMARY KEY, description TEXT NOT NULL, "
            "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        current = schema_version(conn)
        if current > latest:
            raise StateUnavailable(
                f"the state database's schema is at version {current}, newer than this judge "
                f"knows ({latest}): upgrade judge on this host too"
            )
        for migration in migrations:
            if migration.version <= current:
                continue
            for statement in migration.statements:
                conn.execute(statement)
            conn.execute(
                f"INSERT INTO {VERSION_TABLE} (version, description) VALUES (%s, %s)",
                (migration.version, migration.description),
            )
            applied.append(migration.version)
    return applied


# -- SQLite -------------------------------------------------------------------------------

#: The state file (:mod:`judge.state.sqlite`). Version 1 is the schema judge wrote before
#: files had versions, so ``IF NOT EXISTS`` adopts such a file as it is.
SQLITE_STATE: tuple[Migration, ...] = (
    Migration(
        1,
        "Stop rejection counts, custom agents, spending",
        (
            """CREATE TABLE IF NOT EXISTS rejections (
                session_id TEXT PRIMARY KEY,
                count INTEGER NOT NULL,
                updated_at REAL NOT NULL
            )""",
            """CREATE TABLE IF NOT EXISTS agents (
                name TEXT PRIMARY KEY,
                body TEXT NOT NULL,
                updated_at REAL NOT NULL
            )""",
            """CREATE TABLE IF NOT EXISTS spend (
                key TEXT PRIMARY KEY,
                usd REAL NOT NULL,
                updated_at REAL NOT NULL
            )""",
        ),
    ),
    Migration(
        2,
        "Each Stop loop's last rejection (digests) beside its count, to end stalled loops",
        (
            "ALTER TABLE rejections ADD COLUMN answer TEXT",
            "ALTER TABLE rejections ADD COLUMN reason TEXT",
            "ALTER TABLE rejections ADD COLUMN repeats INTEGER NOT NULL DEFAULT 0",
        ),
    ),
)

#: The judgement cache of ``judge eval`` and ``judge tune`` (:mod:`judge.evaluation.cache`).
SQLITE_CACHE: tuple[Migration, ...] = (
    Migration(
        1,
        "Verdicts by request key",
        ("CREATE TABLE IF NOT EXISTS judgements (key TEXT PRIMARY KEY, verdict TEXT NOT NULL)",),
    ),
)


def sqlite_version(db: sqlite3.Connection) -> int:
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def migrate_sqlite(db: sqlite3.Connection, migrations: tuple[Migration, ...], what: str) -> list[int]:
    """Bring the SQLite file on ``db`` (autocommit mode) to the latest version of
    ``migrations``; the versions applied now. ``what`` names the file in errors."""
    latest = latest_version(migrations)
    if sqlite_version(db) == latest:
        return []
    applied: list[int] = []
    db.execute("BEGIN IMMEDIATE")
    try:
        current = sqlite_version(db)
        if current > latest:
            raise StateUnavailable(
                f"{what} is at schema version {current}, newer than this judge knows ({latest}): "
                "upgrade judge, or point it at another file"
            )
        for migration in migrations:
            if migration.version <= current:
                continue
            for statement in migration.statements:
                db.execute(statement)
            applied.append(migration.version)
        db.execute(f"PRAGMA user_version = {latest}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return applied
