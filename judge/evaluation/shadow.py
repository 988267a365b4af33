"""A shadow log as an eval suite: ``judge datasets convert shadow DATA_DIR/shadow_log.jsonl``.

Hooks with ``mode: shadow`` run in production without acting; what they would have
decided is recorded with the context and transcript they judged in ``shadow_log.jsonl``
(:meth:`judge.audit.AuditLog.shadow`). Converted, each record of the chosen event is a case
with its **recorded** verdict (``block`` when a shadow hook would have blocked, with their
reasons) and no label. People label some cases (``"label": "allow" | "block"``), then

* ``judge eval SUITE --recorded`` scores the recorded verdicts against the labels — what
  the gate *would have done* in production, without judging again;
* ``judge eval SUITE`` judges the same cases again with the suite's config (the hooks as
  they would be turned on) — to try a changed prompt or model on real traffic.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from judge.config import EVENTS


class ShadowLogError(Exception):
    """The shadow log cannot be converted."""


def shadow_cases(source: Path, event: str, limit: int | None = None) -> list[dict[str, Any]]:
    """Cases (JSON objects of the cases file) from the records of ``event`` in ``source``."""
    if event not in EVENTS:
        raise ShadowLogError(f"unknown event {event!r} (expected one of {', '.join(EVENTS)})")
    cases: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    try:
        lines = source.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        raise ShadowLogError(f"cannot read {source}: {exc}") from None
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a line cut short by a crash
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
