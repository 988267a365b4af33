"""Anthropic Message Batches through the official SDK: ``messages.batches.create``,
``retrieve`` (``processing_status`` ``in_progress`` → ``ended``, or ``canceling``) and
``results`` (JSONL, one line per request: ``succeeded``, ``errored``, ``canceled`` or
``expired``). Canceled and expired requests are *unfinished*: judged the normal way."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from judge.evaluation.batch.status import BatchError, BatchStatus, Outcome
from judge.redact import redact_url

#: Requests and bytes per batch: the API takes up to 100,000 requests and 256 MB; one
#: batch's requests are sent as one JSON body, so its size is kept lower (memory).
MAX_REQUESTS = 100_000
MAX_BYTES = 64 * 1024 * 1024


class AnthropicBatches:
    """One Anthropic endpoint (key and base URL) for message batches."""

    provider = "anthropic"
    max_requests = MAX_REQUESTS
    max_bytes = MAX_BYTES

    def __init__(self, api_key: str, base_url: str | None) -> None:
        import anthropic

        self.sdk = anthropic
        self.client = anthropic.Anthropic(api_key=api_key, base_url=base_url, max_retries=3, timeout=120)

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except self.sdk.AnthropicError as exc:
            raise BatchError(
                f"anthropic at {redact_url(str(self.client.base_url))}: {what} failed: {exc}"
            ) from None

    def submit(self, requests: Iterable[tuple[str, dict[str, Any]]]) -> str:
        items: Any = [{"custom_id": key, "params": body} for key, body in requests]
        batch = self._call("creating the message batch", self.client.messages.batches.create, requests=items)
        return str(batch.id)

    def poll(self, batch_id: str) -> BatchStatus:
        batch = self._call(
            f"reading message batch {batch_id}", self.client.messages.batches.retrieve, batch_id
        )
        counts = batch.request_counts
        total = counts.processing + counts.succeeded + counts.errored + counts.canceled + counts.expired
        ended = batch.processing_status == "ended"
        problem = None
        if ended and counts.expired:
            problem = "expired"
        elif ended and counts.canceled:
            problem = "cancelled"
        elapsed = (batch.ended_at - batch.created_at).total_seconds() if batch.ended_at else None
        return BatchStatus(
            id=batch_id,
            status=str(batch.processing_status),
            ended=ended,
            done=total - counts.processing,
            total=total,
            failed=counts.errored,
            elapsed_s=elapsed,
            problem=problem,
        )

    def results(self, status: BatchStatus) -> dict[str, Outcome]:
        entries = self._call(
            f"downloading the results of {status.id}", self.client.messages.batches.results, status.id
        )
        outcomes: dict[str, Outcome] = {}
        try:
            for entry in entries:
                outcomes[entry.custom_id] = _outcome(entry.result)
        except Exception as exc:  # the SDK's errors, a broken line (JSONDecodeError), a dropped stream
            raise BatchError(
                f"anthropic: reading the results of {status.id} failed: {type(exc).__name__}: {exc}"
            ) from None
        return outcomes

    def cancel(self, batch_id: str) -> None:
        self._call(f"cancelling message batch {batch_id}", self.client.messages.batches.cancel, batch_id)


def _outcome(result: Any) -> Outcome:
    kind = getattr(result, "type", None)
    if kind == "succeeded":
        return Outcome("answer", result.message.model_dump(mode="json"))
    if kind == "errored":
        error = getattr(getattr(result, "error", None), "error", None)
        kind_name = getattr(error, "type", "error")
        message = getattr(error, "message", "") or kind_name
        return Outcome("error", f"batch request failed ({kind_name}): {str(message)[:300]}")
    if kind in ("canceled", "expired"):
        return Outcome(
            "unfinished", f"the batch {'cancelled' if kind == 'canceled' else 'expired'} before judging it"
        )
    return Outcome("error", f"batch request ended as {kind!r}")
