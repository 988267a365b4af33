"""What the batch clients of :mod:`judge.evaluation.batch.openai` and
:mod:`judge.evaluation.batch.anthropic` report: a batch's status and each request's outcome."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from judge.pricing import BATCH_DISCOUNT, BATCH_DISCOUNT_ENV

POLL_ENV = "JUDGE_BATCH_POLL_SECONDS"
DEFAULT_POLL_SECONDS = 30.0


class BatchSetupError(Exception):
    """A ``--batch`` setting is malformed."""


class BatchError(Exception):
    """A batch API call failed (after the SDK's own retries)."""


@dataclass(frozen=True)
class Outcome:
    """One request's outcome: ``answer`` (the response body), ``error`` (why it failed:
    the judgement is a hook error) or ``unfinished`` (the batch ended before it ran: it is
    judged the normal way)."""

    kind: Literal["answer", "error", "unfinished"]
    value: Any


@dataclass(frozen=True)
class BatchStatus:
    """A batch as last seen. ``problem`` names an abnormal end (failed, expired, cancelled)."""

    id: str
    status: str
    ended: bool
    done: int = 0
    total: int = 0
    failed: int = 0
    elapsed_s: float | None = None
    problem: str | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None


class BatchClient(Protocol):
    """One provider endpoint's batch API."""

    provider: str
    max_requests: int
    max_bytes: int

    def submit(self, requests: Iterable[tuple[str, dict[str, Any]]]) -> str: ...

    def poll(self, batch_id: str) -> BatchStatus: ...

    def results(self, status: BatchStatus) -> dict[str, Outcome]: ...

    def cancel(self, batch_id: str) -> None: ...


def _number(env: Mapping[str, str], name: str, default: float, low: float, high: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not low <= value <= high:
        raise BatchSetupError(f"{name} must be a number from {low:g} to {high:g}, got {raw!r}")
    return value


def poll_seconds(env: Mapping[str, str] | None = None) -> float:
    """Seconds between two polls of a batch (``JUDGE_BATCH_POLL_SECONDS``, default 30)."""
    return _number(os.environ if env is None else env, POLL_ENV, DEFAULT_POLL_SECONDS, 0.0, 3600.0)


def batch_discount(env: Mapping[str, str] | None = None) -> float:
    """The share taken off the list price for batch judgements (``JUDGE_BATCH_DISCOUNT``,
    default :data:`judge.pricing.BATCH_DISCOUNT`)."""
    return _number(os.environ if env is None else env, BATCH_DISCOUNT_ENV, BATCH_DISCOUNT, 0.0, 1.0)
