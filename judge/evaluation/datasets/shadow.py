"""A shadow log as an eval suite: ``judge datasets convert shadow DATA_DIR/shadow_log.jsonl``.

Hooks with ``mode: shadow`` run in production without acting; what they would have
decided is recorded with the context and transcript they judged in ``shadow_log.jsonl``
(:meth:`judge.logs.audit.AuditLog.shadow`). Converted, each record of the chosen event is a case
with its **recorded** verdict (``block`` when a shadow hook would have blocked, with their
reasons) and no label. People label some cases (``"label": "allow" | "block"``), then

* ``judge eval SUITE --recorded`` scores the recorded verdicts against the labels — what
  the gate *would have done* in production, without judging again;
* ``judge eval SUITE`` judges the same cases again with the suite's config (the hooks as
  they would be turned on) — to try a changed prompt or model on real traffic.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from judge.config import EVENTS, unknown_event
from judge.files import FileTooLarge, RefusedFile, load_json, open_regular

#: Largest shadow log read (the same limit as the other dataset files).
MAX_SHADOW_LOG_BYTES = 1 << 30


class ShadowLogError(Exception):
    """The shadow log cannot be converted."""


def _records(source: Path) -> Iterator[tuple[int, Any]]:
    """Each line's number and JSON value (``None`` for a line that is not JSON, such as one
    cut short by a crash), up to :data:`MAX_SHADOW_LOG_BYTES` in all."""
    left = MAX_SHADOW_LOG_BYTES
    try:
        with open_regular(source, "shadow log") as handle:
            number = 0
            while raw := handle.readline(left + 1):
                left -= len(raw)
                if left < 0:
                    raise FileTooLarge(source, "shadow log", MAX_SHADOW_LOG_BYTES)
                number += 1
                try:
                    record = load_json(raw.decode("utf-8", errors="replace"))
                except ValueError:
                    record = None
                yield number, record
    except RefusedFile as exc:
        raise ShadowLogError(str(exc)) from None
    except OSError as exc:
        raise ShadowLogError(f"cannot read {source}: {exc}") from None


def shadow_cases(source: Path, event: str, limit: int | None = None) -> list[dict[str, Any]]:
    """Cases (JSON objects of the cases file) from the records of ``event`` in ``source``."""
    if event not in EVENTS:
        raise ShadowLogError(unknown_event(event))
    cases: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for number, record in _records(source):
        if not isinstance(record, dict) or record.get("event") != event:
            continue
        shadow = [h for h in record.get("shadow") or [] if isinstance(h, dict)]
        context = record.get("context")
        if not shadow or not isinstance(context, dict):
            continue
        blocked = [h for h in shadow if h.get("decision") == "block"]
        reasons = [str(h.get("reason") or h.get("error") or "") for h in blocked]
        session = str(record.get("session_id") or "no-session")
        seen[session] = seen.get(session, 0) + 1
        case: dict[str, Any] = {
            "id": f"{session}#{seen[session]}",
            "context": {**context, "hook_event_name": event},
            "label": None,
            "group": session,
            "tags": ["shadow:block" if blocked else "shadow:allow", f"line:{number}"],
            "recorded": {
                "decision": "block" if blocked else "allow",
                "reason": "\n".join(r for r in reasons if r) or None,
            },
        }
        if isinstance(record.get("transcript"), str):
            case["transcript"] = record["transcript"]
        cases.append(case)
        if limit is not None and len(cases) >= limit:
            break
    if not cases:
        raise ShadowLogError(f"{source}: no {event} records with shadow verdicts")
    return cases
