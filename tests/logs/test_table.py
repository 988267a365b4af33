"""The service's logs as rows of the PostgreSQL state database (``--logs database``) and
``judge logs``, on a real throw-away server; the files path of ``judge logs`` too."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from judge.decision import Decision, HookOutcome
from judge.logs import table as log_table
from judge.logs import table_postgres as log_table_postgres
from judge.logs.audit import AuditLog
from judge.logs.table import iter_log, kind_of
from judge.logs.table_postgres import PostgresLogTable
from judge.state.migrations import MIGRATIONS, migrate, schema_version
from judge.state.postgres import PostgresStore

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def table(pg_url: str) -> Any:
    store = PostgresStore(pg_url)
    yield PostgresLogTable(store)
    store.close()


def _decision(event: str, decision: str) -> Decision:
    hook = HookOutcome(level="agent", index=0, type="command", decision=decision, reason="r")  # type: ignore[arg-type]
    return Decision(event=event, decision=decision, reason="r", hooks=[hook])  # type: ignore[arg-type]


def test_records_come_back_as_written_in_order_by_session_and_page(
    table: PostgresLogTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    odd = {"session_id": "s1", "text": "nul \x00 line\nsep \u2028 emoji \U0001f600", "path": Path("x")}
    first = table.append_log("audit_log", odd)
    ids = [table.append_log("audit_log", {"session_id": f"s{i % 2}", "n": i}) for i in range(7)]
    table.append_log("session_summaries", {"session_id": "s1", "n": "other log"})
    assert first < ids[0] < ids[-1]
    rows = table.read_log("audit_log")
    assert [r[0] for r in rows] == [first, *ids]
    assert rows[0][1] == {"session_id": "s1", "text": odd["text"], "path": "x"}  # NUL kept; Path via str
    assert [r["n"] for _, r in table.read_log("audit_log", after=ids[1], limit=3)] == [2, 3, 4]
    assert [r.get("n") for _, r in table.read_log("audit_log", session="s1")] == [None, 1, 3, 5]
    assert [r["n"] for r in table.recent_log("audit_log", 2)] == [5, 6]  # the newest, oldest first
    monkeypatch.setattr(log_table, "PAGE", 3)
    assert [i for i, _ in iter_log(table, "audit_log")] == [first, *ids]  # three pages
    assert [r["n"] for _, r in iter_log(table, "session_summaries")] == ["other log"]


def test_audit_log_writes_and_reads_the_table(table: PostgresLogTable, tmp_path: Path) -> None:
    audit = AuditLog(tmp_path / "data", table)
    audit.record("PostToolUse", {"session_id": "s", "tool_name": "Bash"}, _decision("PostToolUse", "block"))
    audit.record("Stop", {"session_id": "s", "final_output": "done"}, _decision("Stop", "allow"))
    [call] = list(audit.tool_calls())
    [summary] = list(audit.session_summaries())
    assert (call["tool_name"], call["decision"]) == ("Bash", "block")
    assert (summary["event"], summary["final_output_chars"]) == ("Stop", 4)
    assert not (tmp_path / "data").exists()  # nothing went to files


def test_old_decisions_are_pruned_and_the_audit_records_kept(
    table: PostgresLogTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    for kind in ("decisions", "audit_log"):
        table.append_log(kind, {"old": True})
    with table.store.connection() as conn:
        conn.execute("UPDATE judge_log SET logged_at = now() - interval '2 hours'")
    monkeypatch.setattr(log_table_postgres, "DECISIONS_KEPT", timedelta(hours=1))
    monkeypatch.setattr(log_table_postgres, "PRUNE_EVERY", 1)
    table.append_log("decisions", {"old": False})
    assert [r["old"] for r in table.recent_log("decisions", 10)] == [False]
    assert [r["old"] for r in table.recent_log("audit_log", 10)] == [True]


def test_a_database_of_the_first_schema_is_upgraded_with_its_data(pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert migrate(conn, MIGRATIONS[:1]) == [1]
        conn.execute("INSERT INTO judge_rejections (session_key, count) VALUES ('s', 2)")
    store = PostgresStore(pg_url)
    try:
        assert store.rejection_count("s") == 2
        assert PostgresLogTable(store).append_log("decisions", {"ok": 1}) >= 1
        with store.connection() as conn:
            assert schema_version(conn) == MIGRATIONS[-1].version
    finally:
        store.close()


def test_kinds_and_aliases() -> None:
    assert [kind_of(k) for k in ("audit", "sessions", "shadow", "decisions", "audit_log")] == [
        "audit_log",
        "session_summaries",
        "shadow_log",
        "decisions",
        "audit_log",
    ]
    with pytest.raises(ValueError, match=r"unknown log 'x' .*audit, sessions"):
        kind_of("x")


def _judge(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUDGE_")}
    return subprocess.run(
        [sys.executable, "-m", "judge", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_judge_logs_exports_the_table(table: PostgresLogTable, pg_url: str) -> None:
    ids = [table.append_log("shadow_log", {"session_id": f"s{i % 2}", "n": i}) for i in range(5)]
    with psycopg.connect(pg_url, autocommit=True) as conn:  # written a minute ago: settled
        conn.execute("UPDATE judge_log SET logged_at = logged_at - interval '2 minutes'")
    done = _judge("logs", "shadow", "--state", pg_url)
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["n"] for line in done.stdout.splitlines()] == [0, 1, 2, 3, 4]
    assert "5 record(s) of shadow_log" in done.stderr and f"last id {ids[-1]}" in done.stderr
    assert "password" not in done.stderr
    done = _judge(
        "logs", "shadow", "--state", pg_url, "--after", str(ids[1]), "--session", "s0", "--limit", "1"
    )
    assert [json.loads(line)["n"] for line in done.stdout.splitlines()] == [2]
    assert f"last id {ids[2]}" in done.stderr


def test_judge_logs_reads_the_files_of_a_data_dir(tmp_path: Path) -> None:
    audit = AuditLog(tmp_path)
    for session in ("a", "b", "a"):
        audit.record("Stop", {"session_id": session}, _decision("Stop", "allow"))
    (tmp_path / "decisions.jsonl.1").write_text('{"ts": "1", "n": 1}\n')
    (tmp_path / "decisions.jsonl").write_text('{"ts": "2", "n": 2}\n{torn\n{"ts": "3", "n": 3}\n')
    done = _judge("logs", "sessions", "--data-dir", str(tmp_path), "--session", "a")
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["session_id"] for line in done.stdout.splitlines()] == ["a", "a"]
    assert "last id 3" in done.stderr
    done = _judge("logs", "decisions", "--data-dir", str(tmp_path), "--after", "1")
    assert [json.loads(line)["n"] for line in done.stdout.splitlines()] == [2, 3]  # rotated file first


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["audit", "--state", "postgresql://judge:pw-1@127.0.0.1:1/judge"], "judge:***@127.0.0.1:1"),
        (["audit", "--state", "state.sqlite3"], "--state must be a postgresql://"),
        (["audit", "--data-dir", "no/such/dir"], "--data-dir no/such/dir: not a directory"),
        (["bogus"], "unknown log 'bogus'"),
        (["audit", "--data-dir", ".", "--after", "-1"], "must not be negative"),
    ],
)
def test_judge_logs_errors_are_one_line(args: list[str], expected: str) -> None:
    done = _judge("logs", *args)
    assert done.returncode == 1
    assert expected in done.stderr and "Traceback" not in done.stderr and "pw-1" not in done.stderr
    assert done.stdout == ""


def test_serve_refuses_database_logs_without_a_database_state(tmp_path: Path) -> None:
    done = _judge("serve", "--port", "0", "--data-dir", str(tmp_path), "--logs", "database")
    assert done.returncode == 1
    assert "--logs database needs --state postgresql://" in done.stderr and "listening" not in done.stderr


def test_live_view_commits_skip_the_flush_without_leaking_the_setting(table: PostgresLogTable) -> None:
    table.append_log("decisions", {"session": "s", "n": 1})
    with table.store.connection() as conn:
        # The pooled connection is back to the server's default after that commit.
        assert conn.execute("SHOW synchronous_commit").fetchone() == ("on",)

    class Abandoned(Exception):
        pass

    async def round_that_fails() -> None:
        async with table.store.session_round("s"):
            # Inside a Stop round the row joins the round's transaction (and the setting,
            # which would outlive the insert there, is left alone).
            table.append_log("decisions", {"session": "s", "n": 2})
            with table.store.connection() as conn:
                assert conn.execute("SHOW synchronous_commit").fetchone() == ("on",)
            raise Abandoned

    with pytest.raises(Abandoned):
        asyncio.run(round_that_fails())
    assert [r["n"] for r in table.recent_log("decisions", 5)] == [1]  # rolled back with the round


def test_a_batch_keeps_its_order(table: PostgresLogTable) -> None:
    ids = table.append_many("decisions", [{"session": f"s{n}", "n": n} for n in range(50)])
    assert ids == sorted(ids) and len(set(ids)) == 50
    assert [r["n"] for r in table.recent_log("decisions", 100)] == list(range(50))
    assert [r["n"] for _, r in table.read_log("decisions", session="s7")] == [7]
    assert table.append_many("decisions", []) == []


async def test_an_incremental_read_never_passes_a_row_a_later_commit_may_precede(
    table: PostgresLogTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ids are taken at insert, and a Stop round commits its records at its end: another
    # replica's record can become visible first with a larger id. `judge logs --after`
    # would move past the round's record for good; a settled read waits for it.
    import threading
    import time

    monkeypatch.setattr(log_table_postgres, "EXPORT_LAG", timedelta(seconds=0.5))

    def elsewhere(fn: Any) -> Any:  # another replica: a plain thread, not the round's connection
        out: list[Any] = []
        thread = threading.Thread(target=lambda: out.append(fn()))
        thread.start()
        thread.join(10)
        return out[0]

    async with table.store.session_round("s-round", wait=5):
        inside = table.append_log("session_summaries", {"session_id": "s-round"})
        later = elsewhere(lambda: table.append_log("session_summaries", {"session_id": "s-other"}))
        assert later > inside
        assert [i for i, _ in elsewhere(lambda: table.read_log("session_summaries"))] == [later]
        assert elsewhere(lambda: table.read_log("session_summaries", settled=True)) == []
    time.sleep(0.6)
    settled = table.read_log("session_summaries", settled=True)
    assert [i for i, _ in settled] == [inside, later]
