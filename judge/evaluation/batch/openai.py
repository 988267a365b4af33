"""The OpenAI Batch API through the official SDK: upload a JSONL file (purpose ``batch``),
create a batch on ``/v1/chat/completions``, poll it, read its output and error files.

Statuses: ``validating`` → ``in_progress`` → ``finalizing`` → ``completed``; a batch may
also end ``failed`` (nothing ran), ``expired`` (its 24 h window passed) or ``cancelled``.
Requests an expired or cancelled batch did not finish come back in the error file with
the codes ``batch_expired`` / ``batch_cancelled``: they are *unfinished*, not errors.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterable
from typing import Any

from judge.evaluation.batch.status import BatchError, BatchStatus, Outcome
from judge.redact import redact_url

ENDPOINT = "/v1/chat/completions"
#: The API's limits per batch: requests and input file bytes.
MAX_REQUESTS = 50_000
MAX_BYTES = 190 * 1024 * 1024
_RUNNING = ("validating", "in_progress", "finalizing", "cancelling")
_UNFINISHED_CODES = ("batch_expired", "batch_cancelled")


class OpenAIBatches:
    """One OpenAI endpoint (key and base URL) for batches."""

    provider = "openai"
    max_requests = MAX_REQUESTS
    max_bytes = MAX_BYTES

    def __init__(self, api_key: str, base_url: str | None) -> None:
        import openai

        self.sdk = openai
        self.client = openai.OpenAI(api_key=api_key, base_url=base_url, max_retries=3, timeout=120)

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except self.sdk.OpenAIError as exc:
            raise BatchError(
                f"openai at {redact_url(str(self.client.base_url))}: {what} failed: {exc}"
            ) from None

    def submit(self, requests: Iterable[tuple[str, dict[str, Any]]]) -> str:
        """Upload the requests (a JSONL file, spooled to disk) and create their batch; its id."""
        with tempfile.TemporaryFile(prefix="judge-batch-input-") as data:
            for key, body in requests:
                line = {"custom_id": key, "method": "POST", "url": ENDPOINT, "body": body}
                data.write(json.dumps(line, ensure_ascii=False).encode("utf-8") + b"\n")
            data.seek(0)
            uploaded = self._call(
                "uploading the batch input file",
                self.client.files.create,
                file=("judge-eval-batch.jsonl", data, "application/jsonl"),
                purpose="batch",
            )
        batch = self._call(
            "creating the batch",
            self.client.batches.create,
            input_file_id=uploaded.id,
            endpoint=ENDPOINT,
            completion_window="24h",
            metadata={"created_by": "judge eval --batch"},
        )
        return str(batch.id)

    def poll(self, batch_id: str) -> BatchStatus:
        batch = self._call(f"reading batch {batch_id}", self.client.batches.retrieve, batch_id)
        counts = batch.request_counts
        ended_at = batch.completed_at or batch.failed_at or batch.expired_at or batch.cancelled_at
        problem = None
        if batch.status == "failed":
            errors = [
                e.message
                for e in (batch.errors.data if batch.errors and batch.errors.data else [])
                if e.message
            ]
            problem = "failed" + (f" ({'; '.join(errors)[:300]})" if errors else "")
        elif batch.status in ("expired", "cancelled"):
            problem = batch.status
        return BatchStatus(
            id=batch_id,
            status=str(batch.status),
            ended=batch.status not in _RUNNING,
            done=(counts.completed + counts.failed) if counts else 0,
            total=counts.total if counts else 0,
            failed=counts.failed if counts else 0,
            elapsed_s=float(ended_at - batch.created_at) if ended_at else None,
            problem=problem,
            output_file_id=batch.output_file_id,
            error_file_id=batch.error_file_id,
        )

    def _lines(self, file_id: str | None) -> list[dict[str, Any]]:
        if not file_id:
            return []
        content = self._call(f"downloading {file_id}", self.client.files.content, file_id)
        out = []
        for line in content.text.split("\n"):
            if line.strip():
                try:
                    item = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(item, dict):
                    out.append(item)
        return out

    def results(self, status: BatchStatus) -> dict[str, Outcome]:
        """Each request's outcome (requests missing from both files are unfinished)."""
        outcomes: dict[str, Outcome] = {}
        for item in self._lines(status.output_file_id) + self._lines(status.error_file_id):
            key = item.get("custom_id")
            if not isinstance(key, str):
                continue
            outcomes[key] = _outcome(item, status.problem)
        return outcomes

    def cancel(self, batch_id: str) -> None:
        self._call(f"cancelling batch {batch_id}", self.client.batches.cancel, batch_id)


def _outcome(item: dict[str, Any], problem: str | None) -> Outcome:
    error = item.get("error")
    if isinstance(error, dict):
        code = str(error.get("code") or "")
        message = str(error.get("message") or code or "error")
        if code in _UNFINISHED_CODES:
            return Outcome(
                "unfinished", f"the batch {problem or code.removeprefix('batch_')} before judging it"
            )
        return Outcome(
            "error",
            f"batch request failed ({code}): {message}" if code else f"batch request failed: {message}",
        )
    response = item.get("response")
    if not isinstance(response, dict):
        return Outcome("error", "batch request has neither a response nor an error")
    status = response.get("status_code")
    body = response.get("body")
    if status != 200:
        detail = body.get("error", body) if isinstance(body, dict) else body
        text = detail.get("message") if isinstance(detail, dict) else detail
        return Outcome("error", f"batch request rejected (HTTP {status}): {str(text)[:300]}")
    return Outcome("answer", body)
