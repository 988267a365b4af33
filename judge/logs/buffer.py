"""The live view's log written to the database in batches, off the request path.

Every answer of ``judge serve --logs database`` adds one record to the ``decisions`` log.
Written one by one, that is one more transaction per request; :class:`BufferedLog` keeps
the records in memory and a background thread writes them in one statement every
:data:`INTERVAL` seconds (sooner when :data:`BATCH` are waiting). A batch the database
does not take is dropped and reported (``on_lost``): the answers were given, and this log
is for watching, not the record (the audit log and session summaries are written
synchronously). :meth:`BufferedLog.flush` writes what is waiting now (before the live
view reads); :meth:`BufferedLog.close` writes the rest at shutdown.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from judge.errors import StateUnavailable
from judge.logs.table import LogTable

#: Seconds between writes.
INTERVAL = 0.2
#: Records that wake the writer before the interval is up.
BATCH = 500
#: Records kept while the database does not take them; beyond, new ones are dropped.
MAX_PENDING = 50_000


class BufferedLog:
    """Records of log ``kind`` written to ``table`` in batches by a background thread."""

    def __init__(
        self,
        table: LogTable,
        kind: str,
        on_lost: Callable[[int, Exception], None],
        interval: float = INTERVAL,
    ) -> None:
        self.table = table
        self.kind = kind
        self.on_lost = on_lost
        self.interval = interval
        self._pending: list[dict[str, Any]] = []
        self._lock = threading.Lock()  # guards _pending
        self._writing = threading.Lock()  # one batch at a time, in order
        self._wake = threading.Event()
        self._closed = False
        self._thread: threading.Thread | None = None

    def add(self, record: dict[str, Any]) -> None:
        """Queue ``record`` (never blocks on the database)."""
        with self._lock:
            if len(self._pending) >= MAX_PENDING:
                full = True
            else:
                full = False
                self._pending.append(record)
                if self._thread is None and not self._closed:
                    # Started on first use: a process that never answers (the parent of
                    # --workers N) runs no thread.
                    name = f"judge-log-{self.kind}"
                    self._thread = threading.Thread(target=self._run, name=name, daemon=True)
                    self._thread.start()
                if len(self._pending) >= BATCH:
                    self._wake.set()
        if full:
            waiting = f"{MAX_PENDING} {self.kind} records are waiting for the database"
            self.on_lost(1, StateUnavailable(waiting))

    def flush(self, wait: float = -1) -> None:
        """Write what is waiting, now, in the caller's thread (after at most ``wait``
        seconds for a write in progress; -1: as long as it takes). What cannot be written
        in time is dropped and reported."""
        if not self._writing.acquire(timeout=wait):
            with self._lock:
                batch, self._pending = self._pending, []
            if batch:
                self.on_lost(len(batch), StateUnavailable(f"the database did not answer in {wait:g} s"))
            return
        try:
            with self._lock:
                batch, self._pending = self._pending, []
            if not batch:
                return
            try:
                self.table.append_many(self.kind, batch)
            except Exception as exc:
                self.on_lost(len(batch), exc)
        finally:
            self._writing.release()

    def close(self, timeout: float = 10.0) -> None:
        """Write the rest and stop the thread; a database that does not answer (a frozen
        host) costs at most about ``timeout`` seconds, not the shutdown."""
        self._closed = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self.flush(wait=0 if self._thread is not None and self._thread.is_alive() else timeout)

    def _run(self) -> None:
        while not self._closed:
            self._wake.wait(self.interval)
            self._wake.clear()
            self.flush()
