"""SQLite files carry a schema version: an older file is upgraded in place, a newer one is
refused with a clear message instead of being misread."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from judge.errors import StateUnavailable
from judge.evaluation.cache import JudgementCache
from judge.state.migrations import SQLITE_CACHE, SQLITE_STATE, latest_version, migrate_sqlite
from judge.state.sqlite import SQLiteStore


def _version(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("PRAGMA user_version").fetchone()[0])


def test_a_new_state_file_is_at_the_latest_version(tmp_path: Path) -> None:
    SQLiteStore(tmp_path / "state.sqlite").close()
    assert _version(tmp_path / "state.sqlite") == latest_version(SQLITE_STATE) >= 1


def test_a_state_file_from_before_versions_is_adopted_with_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    with sqlite3.connect(path) as db:  # what judge wrote before files had versions
        db.executescript(
            "CREATE TABLE rejections (session_id TEXT PRIMARY KEY, count INTEGER NOT NULL, "
            "updated_at REAL NOT NULL);"
            "CREATE TABLE agents (name TEXT PRIMARY KEY, body TEXT NOT NULL, updated_at REAL NOT NULL);"
            "CREATE TABLE spend (key TEXT PRIMARY KEY, usd REAL NOT NULL, updated_at REAL NOT NULL);"
            "INSERT INTO rejections VALUES ('Stop:s1', 2, 0);"
        )
    store = SQLiteStore(path)
    assert store.rejection_count("Stop:s1") == 2
    store.close()
    assert _version(path) == latest_version(SQLITE_STATE)


def test_a_state_file_newer_than_this_judge_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version = 999")
    with pytest.raises(
        StateUnavailable, match=r"state database .*state\.sqlite is at schema version 999, newer"
    ):
        SQLiteStore(path)


def test_a_cache_newer_than_this_judge_is_refused_and_an_old_one_kept(tmp_path: Path) -> None:
    newer = tmp_path / "newer.sqlite"
    with sqlite3.connect(newer) as db:
        db.execute("PRAGMA user_version = 7")
    with pytest.raises(StateUnavailable, match=r"judgement cache .* version 7"):
        JudgementCache(newer)
    older = tmp_path / "older.sqlite"
    with sqlite3.connect(older) as db:
        db.execute("CREATE TABLE judgements (key TEXT PRIMARY KEY, verdict TEXT NOT NULL)")
        db.execute("INSERT INTO judgements VALUES ('k', '{}')")
    cache = JudgementCache(older)
    assert len(cache) == 1
    cache.close()
    assert _version(older) == latest_version(SQLITE_CACHE)


def test_a_state_file_of_version_1_keeps_its_counts_and_gains_the_last_rejection(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    with sqlite3.connect(path) as db:
        migrate_sqlite(db, SQLITE_STATE[:1], "f")
        db.execute("INSERT INTO rejections VALUES ('s1', 2, 0)")
    assert _version(path) == 1
    store = SQLiteStore(path)
    assert store.stop_loop("s1") == (2, None)
    from judge.state import StopMemory

    assert store.record_rejection("s1", 1, StopMemory("a" * 64, "b" * 64, 1)) == 3
    assert store.stop_loop("s1") == (3, StopMemory("a" * 64, "b" * 64, 1))
    store.reset("s1")
    assert store.stop_loop("s1") == (0, None)
    store.close()
    assert _version(path) == latest_version(SQLITE_STATE) == 2


def test_each_migration_is_applied_once_and_a_failed_one_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    from judge.state.migrations import Migration

    migrations = (
        Migration(1, "one", ("CREATE TABLE a (x INTEGER)",)),
        Migration(2, "two", ("CREATE TABLE b (x INTEGER)", "CREATE TABLE a (y INTEGER)")),  # fails
    )
    db = sqlite3.connect(tmp_path / "f.sqlite", isolation_level=None)
    assert migrate_sqlite(db, migrations[:1], "f") == [1]
    assert migrate_sqlite(db, migrations[:1], "f") == []
    with pytest.raises(sqlite3.OperationalError):
        migrate_sqlite(db, migrations, "f")
    assert int(db.execute("PRAGMA user_version").fetchone()[0]) == 1
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables == {"a"}
