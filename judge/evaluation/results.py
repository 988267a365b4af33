"""``results.jsonl``: one :class:`CaseResult` per (case, repeat) of an eval run, written
durably as the run goes and read back for reports and ``--resume``.

:class:`ResultsWriter` appends results — one ``write`` per line, fsync'd — from a
background thread so disk latency never stalls the event loop; :func:`read_results` reads
them back (a line cut short by a crash is dropped and its pair re-run).
"""

from __future__ import annotations

import json
import os
import queue
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from judge.decision import CascadeStage, StopOutcome, Usage
from judge.evaluation.suite import Case


class PromptResult(BaseModel):
    """One prompt hook's own verdict on one (case, repeat): what calibration records and the
    samples' figures are computed from."""

    #: Where the hook is written: ``hooks.Stop[0]`` or ``customAgents.NAME.hooks.Stop[0]``.
    place: str
    #: Its verdict; None when it failed (its failMode decided).
    decision: Literal["allow", "block"] | None = None
    #: ``samples`` > 1: each sample's verdict (``allow``, ``block`` or ``error``).
    samples: list[str] | None = None


#: Stop outcomes that let the agent stop although the judge rejected its answer.
LOOP_ENDINGS = frozenset({"forced", "impossible", "stalled"})


class CaseResult(BaseModel):
    """The outcome of one (case, repeat): one line of ``results.jsonl``."""

    model_config = ConfigDict(populate_by_name=True)

    id: str
    repeat: int = 0
    decision: Literal["allow", "block"] | None = None
    reason: str | None = None
    label: Literal["allow", "block"] | None = None
    forced_stop: bool = Field(False, alias="forcedStop")
    #: Stop suites: how the stop ended (``impossible``: the judge said the work cannot be
    #: finished without the user)
    outcome: StopOutcome | None = None
    error: str | None = None
    duration_ms: float = Field(0.0, alias="durationMs")
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = Field(None, alias="costUsd")
    group: str | None = None
    tags: list[str] = Field(default_factory=list)
    cached: bool = False
    #: Cascade hooks (``agent[0]``) -> their stages as called (absent without cascades).
    cascades: dict[str, list[CascadeStage]] | None = None
    #: Each prompt hook's own verdict (absent without prompt hooks).
    prompts: list[PromptResult] | None = None

    @property
    def verdict(self) -> Literal["allow", "block"] | None:
        """The decision metrics score: a Stop the judge rejected is a block, whatever ended the
        loop - forced through by ``maxRejections``, stalled, or judged impossible without the
        user (the label is about the answer: the work is not done)."""
        if self.forced_stop or self.outcome in LOOP_ENDINGS:
            return "block"
        return self.decision

    def to_line(self) -> str:
        """The JSONL line (with its newline)."""
        absent = {k for k in ("cascades", "prompts") if getattr(self, k) is None}
        data = self.model_dump(by_alias=True, exclude=absent)
        return json.dumps(data, ensure_ascii=False) + "\n"


def recorded_result(case: Case) -> CaseResult:
    """The result a case's recorded verdict stands for (``judge eval --recorded``)."""
    assert case.recorded is not None
    return CaseResult(
        id=case.id,
        decision=case.recorded.decision,
        reason=case.recorded.reason,
        label=case.label,
        group=case.group,
        tags=case.tags,
    )


class ResultsWriter:
    """Appends results to a JSONL file durably: one write per line, fsync'd in a background thread.

    Lines are written in the order they are handed in; the file is fsync'd whenever the
    writer catches up, so a crash loses at most the lines still queued (``--resume``
    re-runs those pairs). :meth:`close` drains the queue.
    """

    def __init__(self, path: str | Path, *, truncate: bool = False) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | (os.O_TRUNC if truncate else 0)
        self._fd = os.open(self.path, flags, 0o644)
        self._queue: queue.Queue[bytes | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="results-writer", daemon=True)
        self._thread.start()
        self.error: OSError | None = None

    def write(self, result: CaseResult) -> None:
        self._queue.put(result.to_line().encode("utf-8", "backslashreplace"))  # JSON's own escape

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                break
            try:
                os.write(self._fd, item)
                if self._queue.empty():
                    os.fsync(self._fd)
            except OSError as exc:
                self.error = exc
        try:
            os.fsync(self._fd)
        except OSError as exc:
            self.error = exc

    def close(self) -> None:
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        try:
            os.close(self._fd)
        except OSError:
            pass


def repair_results(path: Path) -> None:
    """Drop a trailing partial line (a crash mid-write) so appending starts on a fresh line."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return
    if data and not data.endswith(b"\n"):
        keep = data.rfind(b"\n") + 1
        with path.open("r+b") as fh:
            fh.truncate(keep)
            fh.flush()
            os.fsync(fh.fileno())


def read_results(path: str | Path) -> list[CaseResult]:
    """Results in a JSONL file, in file order; unreadable lines are skipped."""
    out: list[CaseResult] = []
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return out
    for line in text.split("\n"):  # only \n ends a record: a reason may hold U+2028
        if not line.strip():
            continue
        try:
            out.append(CaseResult.model_validate_json(line))
        except ValidationError:
            try:  # pydantic's parser refuses a lone surrogate's escape; Python's json reads it
                out.append(CaseResult.model_validate(json.loads(line)))
            except (ValueError, ValidationError):
                continue
    return out


def order_results(results: Iterable[CaseResult], cases: list[Case], repeats: int) -> list[CaseResult]:
    """The results for the suite's pairs in case order x repeat (the last line per pair wins).

    Label, group and tags are taken from the suite's current cases.
    """
    by_pair = {(r.id, r.repeat): r for r in results}
    out = []
    for case in cases:
        for r in range(repeats):
            found = by_pair.get((case.id, r))
            if found is not None:
                update = {"label": case.label, "group": case.group, "tags": case.tags}
                out.append(found.model_copy(update=update))
    return out
