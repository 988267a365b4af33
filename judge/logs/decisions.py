"""The service's log of recent decisions (``decisions.jsonl``) and what the live view shows of it.

Every decision ``judge serve`` answers is appended as one short JSON line to
``DATA_DIR/decisions.jsonl`` (one ``write`` on an ``O_APPEND`` descriptor under ``flock``,
owner-only; not fsync'd: it is for watching the gate, the audit logs are the record).
When the file passes :data:`ROTATE_BYTES` it is renamed to ``decisions.jsonl.1`` (the
previous one is dropped). Reasons and errors are cut to a few hundred characters.

:func:`summarize` reads the last :data:`TAIL_BYTES` of the log — whichever worker wrote
them — and computes what ``GET /ui`` shows: recent decisions, the block and error rate of
each hook, the most frequent rejection reasons, forced stops, how the Stops ended (their
outcomes), and decisions, blocks and errors per minute over the last hour.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from judge.decision import STOP_OUTCOMES, Decision
from judge.logs.jsonl import now_iso

DECISIONS_LOG = "decisions.jsonl"
ROTATE_BYTES = 32 * 1024 * 1024
TAIL_BYTES = 2 * 1024 * 1024
REASON_CHARS = 300
#: An agent name is the client's text: kept as long as a valid one can be.
AGENT_CHARS = 128
RECENT = 50
TOP_REASONS = 10
TIMELINE_MINUTES = 60


def _cut(text: str | None, limit: int) -> str | None:
    if text is None:
        return None
    return text if len(text) <= limit else text[:limit] + "…"


def record_of(event: str, agent: Any, session: Any, decision: Decision, seconds: float) -> dict[str, Any]:
    """The log line for one decision."""
    return {
        "ts": now_iso(),
        "event": event,
        "agent": _cut(agent, AGENT_CHARS) if isinstance(agent, str) else None,
        "session": session if isinstance(session, str) else None,
        "decision": decision.decision,
        "forcedStop": decision.forced_stop,
        **({"outcome": decision.outcome} if decision.outcome is not None else {}),
        "reason": _cut(decision.reason, REASON_CHARS),
        "ms": round(seconds * 1000, 1),
        "hooks": [
            {
                "hook": f"{h.level}[{h.index}]",
                "type": h.type,
                "decision": h.decision,
                "error": _cut(h.error, REASON_CHARS),
                **({"mode": "shadow", "reason": _cut(h.reason, REASON_CHARS)} if h.mode == "shadow" else {}),
                **({"calibration": h.calibration.status} if h.calibration is not None else {}),
            }
            for h in decision.hooks
        ],
    }


#: Beside the log: how many records the rotations have dropped, so a record's number
#: (``judge logs decisions --after N``) stays the same when ``.1`` is replaced.
BASE_SUFFIX = ".base"


def _open_current(path: Path) -> int:
    """A descriptor of ``path`` holding its lock, and still ``path`` (not a file another
    writer rotated away while this one waited for the lock)."""
    while True:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            if os.fstat(fd).st_ino == os.stat(path).st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)  # (releases the lock)


def _first_line_digest(path: Path) -> str:
    """A fingerprint of a log file that a copy keeps: the hash of its first line."""
    try:
        with path.open("rb") as handle:
            return hashlib.sha256(handle.readline()).hexdigest()[:16]
    except OSError:
        return "-"


def records_before(data_dir: Path) -> int:
    """Records dropped by rotations so far (the number of the first record in ``.1``, less one).

    ``.base`` holds the count before and after the last rotation and the fingerprint of
    the file that rotation moved to ``.1``: a crash between writing it and moving the file
    leaves the old ``.1`` in place, and the count before is the right one. (A single
    number is the format of an earlier version: that count.)"""
    try:
        words = (data_dir / (DECISIONS_LOG + BASE_SUFFIX)).read_text(encoding="ascii").split()
        if len(words) == 1:
            return int(words[0])
        before, after, moved = int(words[0]), int(words[1]), words[2]
    except (OSError, ValueError, IndexError):
        return 0
    rotated = data_dir / (DECISIONS_LOG + ".1")
    if not rotated.exists():
        return after
    return after if _first_line_digest(rotated) == moved else before


def _rotate(path: Path) -> None:
    """Move the log to ``.1`` (dropping the old ``.1``), counting the records dropped as
    ``judge logs`` counts them. Runs under the log's lock."""
    from judge.logs.jsonl import read_jsonl

    rotated = path.with_name(DECISIONS_LOG + ".1")
    before = records_before(path.parent)
    dropped = sum(1 for _ in read_jsonl(rotated)) if rotated.exists() else 0
    base = path.with_name(DECISIONS_LOG + BASE_SUFFIX)
    tmp = base.with_name(base.name + ".tmp")
    tmp.write_text(f"{before} {before + dropped} {_first_line_digest(path)}\n", encoding="ascii")
    os.replace(tmp, base)
    os.replace(path, rotated)


def append_decision(data_dir: Path, record: dict[str, Any]) -> None:
    """Append ``record`` to the decision log, rotating it when it has grown too large."""
    path = data_dir / DECISIONS_LOG
    line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8", errors="replace")
    fd = _open_current(path)
    try:
        size = os.fstat(fd).st_size
        if size and size + len(line) > ROTATE_BYTES:
            _rotate(path)
            os.close(fd)
            fd = _open_current(path)
        os.write(fd, line)
    finally:
        os.close(fd)


def read_recent(data_dir: Path, tail_bytes: int = TAIL_BYTES) -> list[dict[str, Any]]:
    """The decisions in the last ``tail_bytes`` of the log, oldest first (bad lines skipped)."""
    path = data_dir / DECISIONS_LOG
    try:
        with path.open("rb") as src:
            size = os.fstat(src.fileno()).st_size
            start = max(0, size - tail_bytes)
            src.seek(start)
            data = src.read(size - start)
    except FileNotFoundError:
        return []
    lines = data.split(b"\n")
    if start > 0:
        lines = lines[1:]  # the first line was cut by the tail
    records = []
    for raw in lines:
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("ts"), str):
            records.append(record)
    return records


def _minute(ts: str) -> datetime | None:
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).replace(second=0, microsecond=0)
    except ValueError:
        return None


def summarize(records: list[dict[str, Any]], now: datetime | None = None) -> dict[str, Any]:
    """What the live view shows of ``records`` (oldest first)."""
    now = (now or datetime.now(UTC)).replace(second=0, microsecond=0)
    hooks: dict[tuple[str, str, str], Counter[str]] = {}
    calibration: dict[tuple[str, str, str], str] = {}  # the latest status seen per hook
    reasons: Counter[str] = Counter()
    forced = [r for r in records if r.get("forcedStop")]
    outcomes: Counter[str] = Counter(str(r["outcome"]) for r in records if isinstance(r.get("outcome"), str))
    minutes = [now - timedelta(minutes=i) for i in range(TIMELINE_MINUTES - 1, -1, -1)]
    timeline = {m: {"decisions": 0, "blocks": 0, "errors": 0} for m in minutes}
    for record in records:
        errored = False
        for hook in record.get("hooks") or []:
            if not isinstance(hook, dict):
                continue
            key = (str(record.get("event")), str(hook.get("hook")), str(hook.get("type")))
            counts = hooks.setdefault(key, Counter())
            counts["total"] += 1
            if isinstance(hook.get("calibration"), str):
                calibration[key] = hook["calibration"]
            if hook.get("error"):
                counts["errors"] += 1
                errored = True
            elif hook.get("decision") == "block":
                counts["blocks"] += 1
        if record.get("decision") == "block" and record.get("reason"):
            reasons[str(record["reason"]).splitlines()[0][:160]] += 1
        slot = timeline.get(_minute(record["ts"]))  # type: ignore[arg-type]
        if slot is not None:
            slot["decisions"] += 1
            slot["blocks"] += record.get("decision") == "block"
            slot["errors"] += errored
    return {
        "decisions": len(records),
        "since": records[0]["ts"] if records else None,
        "blocks": sum(1 for r in records if r.get("decision") == "block"),
        "forcedStops": len(forced),
        "outcomes": {name: outcomes[name] for name in STOP_OUTCOMES if outcomes[name]},
        "recent": list(reversed(records[-RECENT:])),
        "hooks": [
            {
                "event": event,
                "hook": hook,
                "type": kind,
                "total": c["total"],
                "blockRate": round(c["blocks"] / c["total"], 4),
                "errorRate": round(c["errors"] / c["total"], 4),
                "calibration": calibration.get((event, hook, kind)),
            }
            for (event, hook, kind), c in sorted(hooks.items())
        ],
        "topReasons": [{"reason": reason, "count": n} for reason, n in reasons.most_common(TOP_REASONS)],
        "recentForcedStops": list(reversed(forced[-10:])),
        "timeline": [{"minute": m.isoformat().replace("+00:00", "Z"), **v} for m, v in timeline.items()],
    }
