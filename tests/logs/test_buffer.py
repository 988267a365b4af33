"""The live view's batched writer: order, batching, flush and close, losses reported."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from judge.errors import StateUnavailable
from judge.logs import buffer as log_buffer
from judge.logs.buffer import BufferedLog


class Table:
    """Records what it is asked to write; fails while ``down``."""

    def __init__(self) -> None:
        self.batches: list[list[dict[str, Any]]] = []
        self.down = False
        self.written = threading.Event()

    def append_many(self, kind: str, records: list[dict[str, Any]]) -> list[int]:
        assert kind == "decisions"
        if self.down:
            raise StateUnavailable("state database x: connection refused")
        self.batches.append(list(records))
        self.written.set()
        return list(range(len(records)))


def _buffer(table: Table, interval: float = 60.0) -> tuple[BufferedLog, list[tuple[int, str]]]:
    lost: list[tuple[int, str]] = []
    buffered = BufferedLog(table, "decisions", lambda n, exc: lost.append((n, str(exc))), interval)  # type: ignore[arg-type]
    return buffered, lost


def test_records_are_written_in_order_in_one_batch_by_the_thread() -> None:
    table = Table()
    buffered, lost = _buffer(table, interval=0.05)
    assert buffered._thread is None  # nothing runs before the first record
    for n in range(5):
        buffered.add({"n": n})
    assert table.written.wait(10)
    buffered.close()
    assert [r["n"] for batch in table.batches for r in batch] == [0, 1, 2, 3, 4]
    assert len(table.batches) <= 2 and lost == []


def test_flush_writes_now_and_close_writes_the_rest() -> None:
    table = Table()
    buffered, _ = _buffer(table)  # the thread would wait a minute
    buffered.add({"n": 1})
    buffered.flush()
    assert table.batches == [[{"n": 1}]]
    buffered.add({"n": 2})
    buffered.close()
    assert table.batches == [[{"n": 1}], [{"n": 2}]]
    assert buffered._thread is not None and not buffered._thread.is_alive()


def test_a_full_batch_wakes_the_writer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(log_buffer, "BATCH", 3)
    table = Table()
    buffered, _ = _buffer(table)
    for n in range(3):
        buffered.add({"n": n})
    assert table.written.wait(10)  # long before the 60 s interval
    buffered.close()


def test_losses_are_reported_with_their_count_and_the_next_batch_goes_through(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(log_buffer, "MAX_PENDING", 2)
    table = Table()
    table.down = True
    buffered, lost = _buffer(table)
    for n in range(3):
        buffered.add({"n": n})  # the third does not fit
    buffered.flush()
    assert lost == [
        (1, "2 decisions records are waiting for the database"),
        (2, "state database x: connection refused"),
    ]
    table.down = False
    buffered.add({"n": 3})
    started = time.monotonic()
    buffered.close()
    assert time.monotonic() - started < 5
    assert table.batches == [[{"n": 3}]]


def test_a_batch_failing_in_an_unexpected_way_is_reported_and_the_writer_goes_on() -> None:
    table = Table()
    buffered, lost = _buffer(table, interval=0.05)
    buffered.add({"n": 1})
    table.append_many = lambda kind, records: (_ for _ in ()).throw(TypeError("not JSON"))  # type: ignore[method-assign]
    deadline = time.monotonic() + 10
    while not lost and time.monotonic() < deadline:
        time.sleep(0.02)
    assert lost == [(1, "not JSON")]
    del table.append_many  # back to the class's method
    buffered.add({"n": 2})
    assert table.written.wait(10)
    buffered.close()
    assert table.batches == [[{"n": 2}]]


def test_a_frozen_database_does_not_hold_the_shutdown() -> None:
    # a database host that stops answering (the connection neither fails nor returns)
    release = threading.Event()

    class Frozen(Table):
        def append_many(self, kind: str, records: list[dict[str, Any]]) -> list[int]:
            release.wait(30)
            return super().append_many(kind, records)

    buffered, lost = _buffer(Frozen(), interval=0.01)
    buffered.add({"n": 1})
    time.sleep(0.2)  # the thread is now stuck writing it
    buffered.add({"n": 2})
    started = time.monotonic()
    buffered.close(timeout=0.3)
    assert time.monotonic() - started < 2
    assert lost == [(1, "the database did not answer in 0 s")]  # the one still waiting, reported
    release.set()
