"""Durable state (SQLite rejection counts, custom agents) and the append-only audit logs,
including many processes writing to the same files at once."""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from judge.decision import Decision, HookOutcome, Usage
from judge.errors import StateUnavailable
from judge.logs.audit import AUDIT_LOG, SESSION_SUMMARIES, AuditLog
from judge.logs.jsonl import append_jsonl
from judge.state import Store
from judge.state import sqlite as state_sqlite

PROCESSES = 8
UPDATES = 20


def _increment_worker(path: str, session: str, start: multiprocessing.synchronize.Event) -> None:  # type: ignore[name-defined]
    store = Store(path)  # every worker also opens (and initialises) the file concurrently
    start.wait()
    for _ in range(UPDATES):
        store.increment_rejection_count(session)
        store.increment_rejection_count(f"{session}-{multiprocessing.current_process().pid}")


def _append_worker(path: str, worker: int, lines: int, start: multiprocessing.synchronize.Event) -> None:  # type: ignore[name-defined]
    start.wait()
    for i in range(lines):
        # Lines far larger than PIPE_BUF, so a non-atomic append would interleave.
        append_jsonl(Path(path), {"worker": worker, "i": i, "payload": f"{worker}:{i}:" + "x" * 200_000})


def _run_all(target: object, args_list: list[tuple[object, ...]]) -> None:
    ctx = multiprocessing.get_context("fork")
    start = ctx.Event()
    procs = [ctx.Process(target=target, args=(*args, start)) for args in args_list]  # type: ignore[arg-type]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(timeout=60)
    assert [p.exitcode for p in procs] == [0] * len(procs)


def test_concurrent_processes_lose_no_increments(tmp_path: Path) -> None:
    path = tmp_path / "state" / "judge.db"
    _run_all(_increment_worker, [(str(path), "shared")] * PROCESSES)
    store = Store(path)
    assert store.rejection_count("shared") == PROCESSES * UPDATES
    own = [s for s in _sessions(path) if s.startswith("shared-")]
    assert len(own) == PROCESSES
    assert all(store.rejection_count(s) == UPDATES for s in own)


def _sessions(path: Path) -> list[str]:
    import sqlite3

    with sqlite3.connect(path) as db:
        return [r[0] for r in db.execute("SELECT session_id FROM rejections")]


def test_rejection_counts_set_increment_reset(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    assert store.rejection_count("a") == 0
    assert store.increment_rejection_count("a") == 1
    assert store.increment_rejection_count("a", by=2) == 3
    store.set_rejection_count("b", 5)
    assert (store.rejection_count("a"), store.rejection_count("b")) == (3, 5)
    store.reset("a")
    assert store.rejection_count("a") == 0
    assert _sessions(tmp_path / "s.db") == ["b"]  # a reset leaves no row behind
    # Durable: a new Store on the same file sees the counts.
    assert Store(tmp_path / "s.db").rejection_count("b") == 5


def test_a_lock_held_by_another_process_is_state_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a backup or an operator's sqlite3 shell holding the write lock: the callers answer
    # per failMode (StateUnavailable), not with an sqlite3 error nobody handles
    monkeypatch.setattr(state_sqlite, "BUSY_SECONDS", 0.2)
    store = Store(tmp_path / "s.db")
    assert store.increment_rejection_count("a") == 1
    other = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO spend VALUES ('x', 0, 0)")
    with pytest.raises(StateUnavailable, match="database is locked"):
        store.increment_rejection_count("a")
    with pytest.raises(StateUnavailable, match="database is locked"):
        store.put_agent("reviewer", {"name": "reviewer"})
    other.execute("ROLLBACK")
    assert store.increment_rejection_count("a") == 2


def test_custom_agents_are_stored_durably(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    body = {"instructions": "Review.", "hooks": {"Stop": [{"prompt": "p"}]}}
    store.put_agent("reviewer", body)
    store.put_agent("writer", {"hooks": {}})
    store.put_agent("reviewer", {**body, "instructions": "Review twice."})
    again = Store(tmp_path / "s.db")
    assert again.get_agent("reviewer") == {**body, "instructions": "Review twice."}
    assert again.list_agents() == ["reviewer", "writer"]
    assert again.delete_agent("writer") is True
    assert again.delete_agent("writer") is False
    assert again.get_agent("writer") is None


def test_concurrent_audit_writers_never_interleave(tmp_path: Path) -> None:
    path = tmp_path / "data" / AUDIT_LOG
    lines = 6
    _run_all(_append_worker, [(str(path), w, lines) for w in range(PROCESSES)])
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert len(records) == PROCESSES * lines
    assert sorted((r["worker"], r["i"]) for r in records) == [
        (w, i) for w in range(PROCESSES) for i in range(lines)
    ]
    assert all(r["payload"] == f"{r['worker']}:{r['i']}:" + "x" * 200_000 for r in records)
    assert path.read_bytes().endswith(b"\n")


def _post_decision(decision: str, reason: str | None, error: str | None = None) -> Decision:
    hook = HookOutcome(level="agent", index=0, type="command", decision=decision, reason=reason, error=error)  # type: ignore[arg-type]
    return Decision(event="PostToolUse", decision=decision, reason=reason, hooks=[hook])  # type: ignore[arg-type]


def test_audit_log_records_tool_calls(tmp_path: Path) -> None:
    audit = AuditLog(tmp_path / "data")
    context = {
        "hook_event_name": "PostToolUse",
        "session_id": "s1",
        "agent_name": "ops",
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
        "tool_result": "a.txt\nb.txt",
        "tool_succeeded": False,
    }
    audit.record("PostToolUse", context, _post_decision("block", "secret", error="boom"))
    audit.record("PreToolUse", {**context, "hook_event_name": "PreToolUse"}, _post_decision("allow", None))
    (line,) = (tmp_path / "data" / AUDIT_LOG).read_text().splitlines()
    record = json.loads(line)
    assert record["tool_name"] == "Bash"
    assert record["tool_input"] == {"command": "ls"}
    assert record["tool_result"] == "a.txt\nb.txt"
    assert record["is_error"] is True
    assert (record["session_id"], record["agent_name"]) == ("s1", "ops")
    assert (record["decision"], record["reason"], record["hook_errors"]) == ("block", "secret", ["boom"])
    assert record["timestamp"].endswith("Z") and record["timestamp"][:2] == "20"
    assert not (tmp_path / "data" / SESSION_SUMMARIES).exists()


def test_session_summaries_record_each_stop_decision(tmp_path: Path) -> None:
    audit = AuditLog(tmp_path / "data")
    hook = HookOutcome(
        level="agent",
        index=0,
        type="prompt",
        decision="block",
        reason="more",
        usage=Usage(inputTokens=120, outputTokens=7),
    )
    forced = Decision(
        event="Stop", decision="allow", reason="more", forcedStop=True, rejectionCount=3, hooks=[hook]
    )
    context = {"session_id": "s9", "agent_name": "main", "current_turn": 4, "final_output": "abc"}
    audit.record("Stop", context, forced)
    audit.record("SubagentStop", context, forced.model_copy(update={"event": "SubagentStop"}))
    first, second = (json.loads(x) for x in (tmp_path / "data" / SESSION_SUMMARIES).read_text().splitlines())
    assert first["event"] == "Stop" and second["event"] == "SubagentStop"
    assert (first["decision"], first["forcedStop"], first["rejectionCount"]) == ("allow", True, 3)
    assert (first["session_id"], first["current_turn"], first["final_output_chars"]) == ("s9", 4, 3)
    assert (first["inputTokens"], first["outputTokens"]) == (120, 7)
    assert not (tmp_path / "data" / AUDIT_LOG).exists()


def test_audit_lines_are_single_lines_even_with_newlines_and_unicode(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    append_jsonl(path, {"text": "line1\nline2 \u2028 é \U0001f600", "obj": Path("x")})
    append_jsonl(path, {"n": 2})
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[-1] == "" and len(lines) == 3
    assert json.loads(lines[0]) == {"text": "line1\nline2 \u2028 é \U0001f600", "obj": "x"}


def test_audit_reads_tool_succeeded_as_the_hooks_do(tmp_path: Path) -> None:
    # the context model reads "false", "no" and 0 as false: the audit line must agree
    audit = AuditLog(tmp_path / "data")
    values = ["false", "no", "0", 0, False, "true", True]
    for value in values:
        context = {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_succeeded": value}
        audit.tool_call(context, _post_decision("allow", None))
    assert [r["is_error"] for r in audit.tool_calls()] == [True, True, True, True, True, False, False]


def test_an_audit_record_the_state_database_cannot_take_is_not_dropped_in_silence(tmp_path: Path) -> None:
    # --logs database: the audit records are the record; the caller answers per failMode
    import asyncio

    from judge.config import config_from_data
    from judge.hooks.engine import Engine
    from judge.hooks.gate import Gate

    class DownAudit(AuditLog):
        def record(self, *args: object, **kwargs: object) -> None:
            raise StateUnavailable("state database: connection refused")

    hooks = {"PostToolUse": [{"type": "command", "matcher": "*", "command": "exit 0"}]}
    gate = Gate(Engine(config_from_data({"hooks": hooks})), None, DownAudit(tmp_path / "data"))
    with pytest.raises(StateUnavailable, match="connection refused"):
        asyncio.run(gate.decide("PostToolUse", {"tool_name": "Bash", "tool_input": {}}))
    # a block stands: a database problem must not let through what a hook caught
    blocking = {"PostToolUse": [{"type": "command", "matcher": "*", "command": "echo leaked >&2; exit 2"}]}
    gate = Gate(Engine(config_from_data({"hooks": blocking})), None, DownAudit(tmp_path / "data"))
    decision = asyncio.run(gate.decide("PostToolUse", {"tool_name": "Bash", "tool_input": {}}))
    assert decision.decision == "block" and decision.reason == "leaked"
    assert "could not write the audit log: state database" in decision.notes[0]

    # a log file that cannot be written stays a note: the decision stands
    class BrokenFiles(AuditLog):
        def record(self, *args: object, **kwargs: object) -> None:
            raise PermissionError("read-only file system")

    gate = Gate(Engine(config_from_data({"hooks": hooks})), None, BrokenFiles(tmp_path / "data"))
    decision = asyncio.run(gate.decide("PostToolUse", {"tool_name": "Bash", "tool_input": {}}))
    assert decision.decision == "allow" and "could not write the audit log" in decision.notes[0]
