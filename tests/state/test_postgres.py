"""The PostgreSQL state store on a real throw-away server: data shared between stores
(standing for replicas on several hosts), atomic counts, Stop rounds serialised in the
database, schema migrations, clear errors for unusable URLs."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest

from judge.errors import StateUnavailable
from judge.logs.table_postgres import PostgresLogTable
from judge.redact import redact_url as redact
from judge.state import open_store
from judge.state.migrations import MIGRATIONS, Migration, migrate, schema_version
from judge.state.postgres import PostgresStore
from judge.state.session_lock import SessionBusy

REPO = Path(__file__).resolve().parents[2]


def test_counts_spend_and_agents_are_shared_between_stores(pg_url: str) -> None:
    first, second = PostgresStore(pg_url), PostgresStore(pg_url)
    try:
        assert first.increment_rejection_count("s1") == 1
        assert second.increment_rejection_count("s1", 2) == 3
        assert first.rejection_count("s1") == 3 and second.rejection_count("nobody") == 0
        second.reset("s1")
        assert first.rejection_count("s1") == 0
        first.set_rejection_count("s2", 7)
        assert second.rejection_count("s2") == 7

        first.add_spend(["session:a", "day:2026-01-01"], 0.25)
        second.add_spend(["session:a", "day:2026-01-01"], 0.5)
        assert first.spent("session:a") == pytest.approx(0.75) and second.spent("day:2026-01-01") == 0.75
        first.add_spend(["session:a"], 0)  # nothing to add: no row change
        assert second.spent("session:b") == 0.0

        body = {"name": "rev", "properties": {"instructions": "Review.", "hooks": {"Stop": []}}}
        first.put_agent("rev", body)
        assert second.get_agent("rev") == body and second.list_agents() == ["rev"]
        assert second.delete_agent("rev") and not first.delete_agent("rev")
        assert first.get_agent("rev") is None and first.list_agents() == []
    finally:
        first.close()
        second.close()


def test_increments_from_many_threads_and_stores_are_exact(pg_url: str) -> None:
    stores = [PostgresStore(pg_url, size=4), PostgresStore(pg_url, size=4)]
    try:
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda i: stores[i % 2].increment_rejection_count("hot"), range(400)))
        assert stores[0].rejection_count("hot") == 400
    finally:
        for store in stores:
            store.close()


async def test_stop_rounds_of_one_session_never_overlap_across_stores(pg_url: str) -> None:
    """Two stores stand for two hosts: only the database serialises them."""
    first, second = PostgresStore(pg_url), PostgresStore(pg_url)
    inside: list[str] = []
    overlaps: list[tuple[str, ...]] = []

    async def round_(store: PostgresStore, tag: str) -> None:
        async with store.session_round("s1"):
            inside.append(tag)
            if len(inside) > 1:
                overlaps.append(tuple(inside))
            # read-modify-write on the round's connection, with a pause between
            count = await asyncio.to_thread(store.rejection_count, "s1")
            await asyncio.sleep(0.01)
            await asyncio.to_thread(store.set_rejection_count, "s1", count + 1)
            inside.remove(tag)

    try:
        await asyncio.gather(*(round_([first, second][i % 2], f"r{i}") for i in range(8)))
        assert not overlaps
        assert first.rejection_count("s1") == 8  # no lost update

        # Different sessions do not wait for each other.
        both_inside = asyncio.Event()
        entered: list[str] = []

        async def other(store: PostgresStore, session: str) -> None:
            async with store.session_round(session):
                entered.append(session)
                if len(entered) == 2:
                    both_inside.set()
                await asyncio.wait_for(both_inside.wait(), timeout=10)

        await asyncio.gather(other(first, "a"), other(second, "b"))
    finally:
        first.close()
        second.close()


async def test_a_held_round_makes_others_wait_at_most_the_wait(pg_url: str) -> None:
    holder, waiter = PostgresStore(pg_url), PostgresStore(pg_url)
    try:
        async with holder.session_round("s1"):
            with pytest.raises(SessionBusy, match="still being judged"):
                async with waiter.session_round("s1", wait=0.2):
                    pass
        async with waiter.session_round("s1", wait=5):
            pass
    finally:
        holder.close()
        waiter.close()


async def test_a_round_that_fails_saves_nothing(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    try:
        with pytest.raises(RuntimeError):
            async with store.session_round("s1"):
                await asyncio.to_thread(store.increment_rejection_count, "s1")
                raise RuntimeError("the judgement failed")
        assert store.rejection_count("s1") == 0
    finally:
        store.close()


HOLDER = """
import asyncio, sys, threading
from judge.state.postgres import PostgresStore

async def main():
    store = PostgresStore(sys.argv[1])
    async with store.session_round("s1"):
        print("held", flush=True)
        await asyncio.to_thread(sys.stdin.read)

asyncio.run(main())
"""


async def test_a_replica_killed_mid_round_frees_the_session(pg_url: str) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, pg_url], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    store = PostgresStore(pg_url)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        with pytest.raises(SessionBusy):
            async with store.session_round("s1", wait=0.1):
                pass
        holder.kill()  # SIGKILL: no commit, no unlock; the server drops its connection
        holder.wait(timeout=10)
        async with store.session_round("s1", wait=10):
            pass
    finally:
        holder.kill()
        store.close()


# ---------------------------------------------------------------------------
# Schema migrations


def test_migrations_on_an_empty_and_an_existing_database(pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert schema_version(conn) == 0
        assert migrate(conn) == [m.version for m in MIGRATIONS]
        assert migrate(conn) == []  # up to date: nothing re-applied
        conn.execute("INSERT INTO judge_rejections (session_key, count) VALUES ('kept', 3)")
        column = ("ALTER TABLE judge_rejections ADD note TEXT",)
        newer = (*MIGRATIONS, Migration(MIGRATIONS[-1].version + 1, "a column", column))
        assert migrate(conn, newer) == [newer[-1].version]
        assert schema_version(conn) == newer[-1].version
        row = conn.execute("SELECT count, note FROM judge_rejections WHERE session_key = 'kept'").fetchone()
        assert row == (3, None)
        described = conn.execute("SELECT description FROM judge_schema_version ORDER BY version").fetchall()
        assert [d[0] for d in described] == [m.description for m in newer]
    # This judge does not know that version: it refuses the database rather than write into it.
    with pytest.raises(StateUnavailable, match="newer than this judge knows"):
        PostgresStore(pg_url)


def test_replicas_starting_together_migrate_once(pg_url: str) -> None:
    barrier = threading.Barrier(4)

    def start(_: int) -> PostgresStore:
        barrier.wait(timeout=30)
        return PostgresStore(pg_url, size=1)

    with ThreadPoolExecutor(4) as pool:
        stores = list(pool.map(start, range(4)))
    for store in stores:
        store.close()
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute("SELECT version FROM judge_schema_version ORDER BY version").fetchall()
    assert [r[0] for r in rows] == [m.version for m in MIGRATIONS]


def test_a_current_database_needs_no_create_privilege(pg_url: str) -> None:
    """As documented: CREATE the first time (migrations), then only the table privileges;
    a read-only user can export the logs."""
    PostgresStore(pg_url).close()  # the owner migrates
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for role in ("judge_writer", "judge_reader"):
            conn.execute(f"DROP ROLE IF EXISTS {role}")
            conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        conn.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO judge_writer")
        conn.execute("GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO judge_writer")
        conn.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO judge_reader")
    writer = PostgresStore(pg_url.replace("judge@", "judge_writer@", 1))
    try:
        assert writer.increment_rejection_count("s") == 1
        PostgresLogTable(writer).append_log("audit_log", {"session_id": "s", "tool_name": "Bash"})
    finally:
        writer.close()
    reader = PostgresStore(pg_url.replace("judge@", "judge_reader@", 1))
    try:
        assert reader.rejection_count("s") == 1
        assert [r["tool_name"] for _, r in PostgresLogTable(reader).read_log("audit_log")] == ["Bash"]
        with pytest.raises(StateUnavailable, match="permission denied"):
            reader.increment_rejection_count("s")
    finally:
        reader.close()


# ---------------------------------------------------------------------------
# Unusable URLs


def test_unusable_urls_are_clear_errors(postgres: object, pg_url: str) -> None:
    missing = pg_url.replace("/t", "/no_such_db_", 1)
    with pytest.raises(StateUnavailable, match=r'database "no_such_db_.*" does not exist'):
        open_store(missing)
    with pytest.raises(StateUnavailable, match=r"(?i)connection refused") as refused:
        open_store("postgresql://judge:s3cret@127.0.0.1:1/judge")
    assert "s3cret" not in str(refused.value) and "judge:***@127.0.0.1:1" in str(refused.value)
    with pytest.raises(StateUnavailable, match="cannot use the state database"):
        open_store("postgresql://judge@/db?sslmode=bogus")
    with pytest.raises(StateUnavailable, match="unsupported state URL scheme 'mysql'"):
        open_store("mysql://judge@localhost/db")


def test_redact_hides_passwords() -> None:
    assert redact("postgresql://u:pw@h:5432/db") == "postgresql://u:***@h:5432/db"
    assert redact("postgresql://h/db?password=pw&sslmode=require") == (
        "postgresql://h/db?password=***&sslmode=require"
    )
    assert redact("postgresql://u@h/db") == "postgresql://u@h/db"
