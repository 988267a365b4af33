"""`judge serve` under load: TCP_NODELAY, session locks, concurrent Stops of one session,
`--workers 2` sharing the state database, graceful stop of a multi-worker service."""

from __future__ import annotations

import asyncio
import signal
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from judge.service.run import bind_socket
from judge.state import SQLiteStore
from tests.service.test_service import Service

LOAD_CONFIG = """
hooks:
  Stop:
    - type: prompt
      model: "fake:block:Add the test results."
      prompt: "Is the answer complete? $ARGUMENTS"
      maxRejections: 4
    - type: command
      command: "cat > /dev/null; sleep 0.2"
  PostToolUse:
    - type: command
      matcher: Whoami
      command: |
        cat > /dev/null
        w=$(awk '/^PPid/{print $2}' /proc/$PPID/status)
        echo "{\\"hookSpecificOutput\\": {\\"additionalContext\\": \\"$w\\"}}"
"""
MAX_REJECTIONS = 4


def _stop(service: Service, session: str, i: int = 0) -> dict[str, Any]:
    status, decision = service.request(
        "POST", "/api/v2/hooks/Stop", {"final_output": f"answer {i}", "session_id": session}
    )
    assert status == 200, decision
    return dict(decision)


def _concurrent_stops(service: Service, session: str, n: int) -> list[dict[str, Any]]:
    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(lambda i: _stop(service, session, i), range(n)))


def _assert_one_loop(decisions: list[dict[str, Any]]) -> None:
    """N = maxRejections rounds of one session: counts 1..N, the last one forced through."""
    assert sorted(d["rejectionCount"] for d in decisions) == list(range(1, MAX_REJECTIONS + 1))
    forced = [d for d in decisions if d["forcedStop"]]
    assert len(forced) == 1 and forced[0]["rejectionCount"] == MAX_REJECTIONS
    assert forced[0]["decision"] == "allow"
    assert all(d["decision"] == "block" for d in decisions if not d["forcedStop"])


# ---------------------------------------------------------------------------
# The socket: no Nagle stall on kept-alive connections


async def test_accepted_sockets_have_tcp_nodelay() -> None:
    """asyncio sets TCP_NODELAY only on sockets whose proto is IPPROTO_TCP; without it a
    response written in two parts waits ~40 ms for the client's delayed ACK."""
    listener = bind_socket("127.0.0.1", 0)
    port = listener.getsockname()[1]
    seen: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        seen.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    server = await asyncio.start_server(handle, sock=listener)
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        for _ in range(200):
            if seen:
                break
            await asyncio.sleep(0.01)
        writer.close()
    finally:
        server.close()
        await server.wait_closed()
    assert seen and seen[0] != 0
    assert listener.proto == socket.IPPROTO_TCP


# ---------------------------------------------------------------------------
# Stop rounds of the SQLite store (the service's one session lock)


async def test_session_rounds_serialise_one_session_across_stores(tmp_path: Path) -> None:
    """Two stores on one file stand for two worker processes (flock is per open file)."""
    first, second = SQLiteStore(tmp_path / "s.db"), SQLiteStore(tmp_path / "s.db")
    folder = tmp_path / "s.db.locks"
    inside: list[str] = []
    overlaps: list[tuple[str, ...]] = []

    async def round_(locks: SQLiteStore, session: str, tag: str) -> None:
        async with locks.session_round(session):
            inside.append(tag)
            if len([t for t in inside if t.startswith(session)]) > 1:
                overlaps.append(tuple(inside))
            await asyncio.sleep(0.02)
            inside.remove(tag)

    start = time.monotonic()
    await asyncio.gather(
        *(round_(locks, "s1", f"s1-{i}") for i, locks in enumerate([first, second, first, second]))
    )
    assert not overlaps
    assert time.monotonic() - start >= 4 * 0.02
    assert not list(folder.iterdir())  # lock files removed by their holders
    assert not len(first._queue) and not len(second._queue)

    # Different sessions do not wait for each other: each holder waits, inside its lock,
    # until the other one is inside too (it would wait in vain if "b" waited for "a").
    events: list[str] = []
    both_inside = asyncio.Event()

    async def other(session: str) -> None:
        async with first.session_round(session):
            events.append(f"enter {session}")
            if len(events) == 2:
                both_inside.set()
            await asyncio.wait_for(both_inside.wait(), timeout=10)
            events.append(f"leave {session}")

    await asyncio.gather(other("a"), other("b"))
    assert events[:2] == ["enter a", "enter b"] and sorted(events[2:]) == ["leave a", "leave b"]


# ---------------------------------------------------------------------------
# Concurrent Stops of one session (one worker)


def test_concurrent_stops_of_one_session_count_one_to_n(tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text(LOAD_CONFIG)
    args = ["--config", str(tmp_path / "agent.yaml"), "--data-dir", str(tmp_path / "data")]
    service = Service(tmp_path, args).start()
    try:
        _assert_one_loop(_concurrent_stops(service, "same-session", MAX_REJECTIONS))
        # The forced stop reset the count: the next round starts a new loop.
        assert _stop(service, "same-session")["rejectionCount"] == 1
    finally:
        assert service.stop() == 0


# ---------------------------------------------------------------------------
# --workers 2


@pytest.mark.slow
def test_two_workers_share_counts_and_stop_gracefully(tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text(LOAD_CONFIG)
    args = ["--config", str(tmp_path / "agent.yaml"), "--data-dir", str(tmp_path / "data")]
    # The Whoami hook names its worker (its supervisor's parent): keep hooks in the
    # workers' PID namespace so that pid is visible to it.
    service = Service(tmp_path, [*args, "--workers", "2"], env={"JUDGE_HOOK_NAMESPACES": "0"}).start()
    try:
        assert "2 worker(s)" in service.text()
        # Both workers answer (each request is a new connection; the kernel spreads them).
        pids: set[str] = set()
        for _ in range(200):
            status, decision = service.request(
                "POST", "/api/v2/hooks/PostToolUse", {"tool_name": "Whoami", "tool_input": {}}
            )
            assert status == 200, decision
            pids.add(decision["hookSpecificOutput"]["additionalContext"])
            if len(pids) == 2:
                break
        assert len(pids) == 2, pids

        # One session's count stays exact whichever worker answers: consecutive rounds...
        assert [_stop(service, "seq", i)["rejectionCount"] for i in range(3)] == [1, 2, 3]
        last = _stop(service, "seq", 3)
        assert last["forcedStop"] and last["rejectionCount"] == MAX_REJECTIONS
        # ...and concurrent ones, held in order across the workers.
        _assert_one_loop(_concurrent_stops(service, "par", MAX_REJECTIONS))
        assert _stop(service, "par")["rejectionCount"] == 1

        # Graceful stop: a request in flight when SIGTERM arrives still gets its answer.
        answer: list[dict[str, Any]] = []
        inflight = threading.Thread(target=lambda: answer.append(_stop(service, "last")))
        inflight.start()
        # The request is in flight once it holds its session's lock (a file in data/state.sqlite3.locks,
        # removed when the round ends).
        locks = tmp_path / "data" / "state.sqlite3.locks"
        deadline = time.monotonic() + 10
        while not (locks.is_dir() and any(locks.iterdir())) and time.monotonic() < deadline:
            time.sleep(0.005)
        assert any(locks.iterdir()), "the request never reached its hooks"
        assert service.proc is not None
        service.proc.send_signal(signal.SIGTERM)
        inflight.join(timeout=20)
        assert answer and answer[0]["rejectionCount"] == 1
        assert service.proc.wait(timeout=20) == 0
    finally:
        assert service.stop() == 0
    text = service.text()
    assert "judge serve: stopped" in text and "Traceback" not in text
    assert not list((tmp_path / "data" / "state.sqlite3.locks").iterdir())
