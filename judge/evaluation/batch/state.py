"""``judge eval --batch``'s saved state, ``DIR/batch.json`` (the submitted batches and
where each (case, repeat) went: ``--resume`` polls the saved batches instead of submitting
them again), and the report section and summary lines made from it."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

STATE_NAME = "batch.json"
BATCH_ROUTE = "batch"
Pair = tuple[str, int]


class SavedBatch(BaseModel):
    """A submitted batch, as saved in ``DIR/batch.json``."""

    model_config = ConfigDict(populate_by_name=True)

    provider: str
    base_url: str | None = Field(None, alias="baseUrl")
    model: str
    id: str
    keys: list[str]
    submitted_at: str = Field(alias="submittedAt")
    status: str = "submitted"
    problem: str | None = None
    elapsed_s: float | None = Field(None, alias="elapsedSeconds")


class SavedRoute(BaseModel):
    id: str
    repeat: int
    route: str


class BatchState(BaseModel):
    """``DIR/batch.json``: the batches of the run and where each (case, repeat) went."""

    version: int = 1
    batches: list[SavedBatch] = Field(default_factory=list)
    routes: list[SavedRoute] = Field(default_factory=list)

    def route_map(self) -> dict[Pair, str]:
        return {(r.id, r.repeat): r.route for r in self.routes}


def load_state(out: Path) -> BatchState:
    try:
        return BatchState.model_validate_json((out / STATE_NAME).read_text(encoding="utf-8"))
    except (OSError, ValidationError, ValueError):
        return BatchState()


def save_state(out: Path, state: BatchState) -> None:
    path = out / STATE_NAME
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # batch ids: the owner's
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(state.model_dump_json(by_alias=True, indent=2) + "\n")
    os.replace(tmp, path)


def report_section(state: BatchState, discount: float, max_transcript_chars: int) -> dict[str, Any]:
    """``report.json``'s ``batch`` section: where each judgement went and why."""
    normal = [r for r in state.routes if r.route != BATCH_ROUTE]
    return {
        "judgedInBatches": len(state.routes) - len(normal),
        "judgedNormally": len(normal),
        "normalReasons": dict(Counter(r.route for r in normal).most_common()),
        "normalCases": [{"id": r.id, "repeat": r.repeat, "reason": r.route} for r in normal],
        "batches": [
            {
                "provider": b.provider,
                "model": b.model,
                "id": b.id,
                "status": b.status,
                "requests": len(b.keys),
                "problem": b.problem,
            }
            for b in state.batches
        ],
        "discount": discount,
        "maxTranscriptChars": max_transcript_chars,
    }


def summary_lines(section: dict[str, Any]) -> list[str]:
    """The CLI summary's lines about the batches."""
    lines = [
        f"  batch: {section['judgedInBatches']} judgement(s) through batch APIs "
        f"(priced {section['discount'] * 100:g}% below list), {section['judgedNormally']} the normal way"
    ]
    lines += [f"    {n} x {why}" for why, n in list(section["normalReasons"].items())[:5]]
    for b in section["batches"]:
        extra = f" ({b['problem']})" if b["problem"] else ""
        lines.append(f"    {b['provider']} batch {b['id']}: {b['status']}{extra}, {b['requests']} request(s)")
    return lines
