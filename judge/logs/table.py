"""The service's logs kept as rows of the state database instead of JSONL files.

With ``judge serve --state postgresql://...`` the logs default to the database
(``--logs database``): every replica writes its audit records, session summaries, shadow
verdicts and live-view decisions into one table, so ``GET /ui`` on any replica shows the
whole fleet and ``judge logs`` exports any of them as the JSONL the files would hold.
Without a database (``--logs files``) each replica writes the files of its ``--data-dir``
(:mod:`judge.logs.audit`, :mod:`judge.logs.decisions`).

A log is named by its file's stem (:data:`KINDS`); a record is the same JSON object in
either place.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

#: The logs, by name (the stem of each file in ``--data-dir``): what each holds.
KINDS: dict[str, str] = {
    "audit_log": "one record per PostToolUse call (the tool, its input and result, the decision)",
    "session_summaries": "one record per Stop/SubagentStop decision",
    "shadow_log": "what shadow hooks would have decided, with what they judged",
    "decisions": "every decision the service answered (the live view's source)",
}
#: Short names ``judge logs`` also accepts.
ALIASES = {"audit": "audit_log", "sessions": "session_summaries", "shadow": "shadow_log"}
#: Rows read per query when a whole log is read.
PAGE = 1000


class LogTable(Protocol):
    """Where the logs go when they are kept in a database."""

    def append_log(self, kind: str, record: dict[str, Any]) -> int:
        """Store ``record`` in log ``kind``; its row id (ids grow with time)."""
        ...

    def append_many(self, kind: str, records: list[dict[str, Any]]) -> list[int]:
        """Store ``records`` in log ``kind``, in order, in one statement; their row ids."""
        ...

    def read_log(
        self,
        kind: str,
        *,
        after: int = 0,
        limit: int = PAGE,
        session: str | None = None,
        settled: bool = False,
    ) -> list[tuple[int, dict[str, Any]]]:
        """Up to ``limit`` records of ``kind`` with ids above ``after``, oldest first
        (``session``: only that session's; ``settled``: only ids no later commit can
        come in below, for exports that continue after the last id they saw)."""
        ...

    def recent_log(self, kind: str, limit: int) -> list[dict[str, Any]]:
        """The newest ``limit`` records of ``kind``, oldest first."""
        ...


def session_of(record: dict[str, Any]) -> str | None:
    """The session a record belongs to (``session_id``; ``session`` in the live view's)."""
    value = record.get("session_id", record.get("session"))
    return value if isinstance(value, str) and value else None


def kind_of(name: str) -> str:
    """The log named ``name`` (a kind or an alias); ValueError naming the choices."""
    kind = ALIASES.get(name, name)
    if kind not in KINDS:
        choices = ", ".join([*ALIASES, *KINDS])
        raise ValueError(f"unknown log {name!r} (choose one of: {choices})")
    return kind


def iter_log(
    table: LogTable, kind: str, *, after: int = 0, session: str | None = None, settled: bool = False
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Every record of ``kind`` after id ``after``, a page at a time, oldest first."""
    while True:
        rows = table.read_log(kind, after=after, limit=PAGE, session=session, settled=settled)
        yield from rows
        if len(rows) < PAGE:
            return
        after = rows[-1][0]
