"""Schema migrations of the PostgreSQL state database.

The table ``judge_schema_version`` holds one row per applied migration (version,
description, when). Every service process runs :func:`migrate` when it opens the
database. A current schema costs one read (no DDL, so a user without ``CREATE`` can run
judge); an older one is upgraded under a transaction-scoped advisory lock, so replicas
starting together apply each migration exactly once, and in one transaction, so a failed
upgrade leaves the previous schema intact. A database whose version is newer than this judge knows is
refused (an older replica must not write into a schema it does not understand).

Migrations are append-only: a released one is never edited; a change of schema is a new
entry at the end of :data:`MIGRATIONS`.
"""

from __future__ import annotations

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
