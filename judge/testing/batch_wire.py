"""The batch endpoints of the test model server: OpenAI's Files and Batch APIs and
Anthropic's Message Batches, answered with the server's own reply scripting.

OpenAI: ``POST /v1/files`` (multipart upload), ``GET /v1/files/{id}`` and
``/v1/files/{id}/content``; ``POST /v1/batches``, ``GET /v1/batches/{id}``,
``POST /v1/batches/{id}/cancel``. A batch advances one status per retrieve:
``validating`` → ``in_progress`` → ``finalizing`` (its requests are answered then, each
as a ``/v1/chat/completions`` request of the server) → ``completed``, with an output file
(answers) and an error file (requests the script answered with an HTTP error).

Anthropic's Message Batches: :mod:`judge.testing.message_batch_wire`.

On demand (:class:`BatchControls`, ``server.batches``): ``hold`` keeps batches running;
``end_as`` ends them ``failed`` (OpenAI), ``expired`` or ``cancelled`` instead, after
answering the first ``finish_only`` requests. Every call is recorded in the server's
``side_requests`` as ``"METHOD /path"``; each answered batch line in ``requests``, with
its batch's id in the header :data:`BATCH_HEADER`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Awaitable, Callable
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any, Literal

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from judge.testing.llm_replies import LLMRequest, Reply, WireFormat
from judge.testing.message_batch_wire import BATCH_HEADER, MessageBatches

__all__ = ["BATCH_HEADER", "BatchControls", "BatchStore"]

OPENAI_ENDPOINTS = ("/v1/chat/completions",)


class BatchControls:
    """What the next batches do (see the module docstring)."""

    def __init__(self) -> None:
        self.hold = False
        self.end_as: Literal["completed", "failed", "expired", "cancelled"] = "completed"
        self.finish_only = 0
        #: Set whenever a batch is retrieved (tests wait for a client to be polling).
        self.polled = threading.Event()


class BatchStore:
    """The files and batches of one server."""

    def __init__(
        self,
        answer: Callable[[LLMRequest], Awaitable[Reply]],
        body_for: Callable[[LLMRequest, Reply], dict[str, Any]],
        note: Callable[[Request, dict[str, Any] | None], None],
        check_key: Callable[[Request, WireFormat], Response | None],
        base_url: Callable[[], str],
    ) -> None:
        self.answer, self.body_for, self.note, self.check_key, self.base_url = (
            answer,
            body_for,
            note,
            check_key,
            base_url,
        )
        self.controls = BatchControls()
        self.files: dict[str, dict[str, Any]] = {}
        self.contents: dict[str, bytes] = {}
        self.openai: dict[str, dict[str, Any]] = {}
        self.messages = MessageBatches(self)
        self._n = 0

    def _id(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}{self._n:06d}"

    def routes(self) -> list[Route]:
        return [
            Route("/v1/files", self.upload, methods=["POST"]),
            Route("/v1/files/{file_id}", self.file, methods=["GET"]),
            Route("/v1/files/{file_id}/content", self.content, methods=["GET"]),
            Route("/v1/batches", self.create_openai, methods=["POST"]),
            Route("/v1/batches/{batch_id}", self.retrieve_openai, methods=["GET"]),
            Route("/v1/batches/{batch_id}/cancel", self.cancel_openai, methods=["POST"]),
            *self.messages.routes(),
        ]

    async def _begin(
        self, request: Request, fmt: WireFormat, json_body: bool = False
    ) -> tuple[Any, Response | None]:
        body: Any = None
        if json_body:
            try:
                body = json.loads(await request.body())
            except (json.JSONDecodeError, UnicodeDecodeError):
                body = None
        self.note(request, body if isinstance(body, dict) else None)
        refused = self.check_key(request, fmt)
        if refused is not None:
            return body, refused
        if json_body and not isinstance(body, dict):
            return body, _error(fmt, 400, "request body must be a JSON object")
        return body, None

    # -- OpenAI files ------------------------------------------------------------

    async def upload(self, request: Request) -> Response:
        _, refused = await self._begin(request, "openai")
        if refused is not None:
            return refused
        raw = await request.body()
        head = f"Content-Type: {request.headers.get('content-type', '')}\r\n\r\n".encode()
        parsed = BytesParser(policy=HTTP).parsebytes(head + raw)
        fields: dict[str, tuple[str | None, bytes]] = {}
        for part in parsed.iter_parts() if parsed.is_multipart() else []:
            name = part.get_param("name", header="content-disposition")
            payload = part.get_payload(decode=True)
            if isinstance(name, str) and isinstance(payload, bytes):
                fields[name] = (part.get_filename(), payload)
        if "file" not in fields or "purpose" not in fields:
            return _error("openai", 400, "a multipart body with 'file' and 'purpose' is required")
        purpose = fields["purpose"][1].decode("utf-8", "replace")
        if purpose not in ("batch", "assistants", "fine-tune", "vision", "user_data", "evals"):
            return _error("openai", 400, f"invalid purpose {purpose!r}")
        return JSONResponse(self._store_file(fields["file"][0] or "upload", purpose, fields["file"][1]))

    def _store_file(self, filename: str, purpose: str, data: bytes) -> dict[str, Any]:
        file_id = self._id("file-")
        self.contents[file_id] = data
        self.files[file_id] = {
            "id": file_id,
            "object": "file",
            "bytes": len(data),
            "created_at": int(time.time()),
            "filename": filename,
            "purpose": purpose,
            "status": "processed",
        }
        return self.files[file_id]

    async def file(self, request: Request) -> Response:
        _, refused = await self._begin(request, "openai")
        found = self.files.get(request.path_params["file_id"])
        if refused is not None or found is None:
            return refused or _error("openai", 404, "no such file")
        return JSONResponse(found)

    async def content(self, request: Request) -> Response:
        _, refused = await self._begin(request, "openai")
        found = self.contents.get(request.path_params["file_id"])
        if refused is not None or found is None:
            return refused or _error("openai", 404, "no such file")
        return Response(found, media_type="application/octet-stream")

    # -- OpenAI batches ----------------------------------------------------------

    async def create_openai(self, request: Request) -> Response:
        body, refused = await self._begin(request, "openai", json_body=True)
        if refused is not None:
            return refused
        file_id = body.get("input_file_id")
        if file_id not in self.files:
            return _error("openai", 400, f"input file {file_id!r} not found")
        if body.get("endpoint") not in OPENAI_ENDPOINTS:
            return _error("openai", 400, f"unsupported endpoint {body.get('endpoint')!r}")
        if body.get("completion_window") != "24h":
            return _error("openai", 400, "completion_window must be '24h'")
        now = int(time.time())
        batch_id = self._id("batch_")
        self.openai[batch_id] = {
            "id": batch_id,
            "object": "batch",
            "endpoint": body["endpoint"],
            "errors": None,
            "input_file_id": file_id,
            "completion_window": "24h",
            "status": "validating",
            "output_file_id": None,
            "error_file_id": None,
            "created_at": now,
            "expires_at": now + 86400,
            "request_counts": {"total": 0, "completed": 0, "failed": 0},
            "metadata": body.get("metadata"),
        }
        return JSONResponse(self.openai[batch_id])

    def _lines(self, batch: dict[str, Any]) -> list[dict[str, Any]] | str:
        """The input file's requests, or why the batch fails validation."""
        lines: list[dict[str, Any]] = []
        seen: set[str] = set()
        text = self.contents[batch["input_file_id"]].decode("utf-8", "replace")
        for number, line in enumerate(text.split("\n"), 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError:
                return f"line {number}: not JSON"
            if not isinstance(item, dict) or not isinstance(item.get("body"), dict):
                return f"line {number}: no request body"
            key = item.get("custom_id")
            if not isinstance(key, str) or key in seen:
                return f"line {number}: custom_id missing or duplicated"
            if item.get("method") != "POST" or item.get("url") != batch["endpoint"]:
                return f"line {number}: the url must be the batch's endpoint {batch['endpoint']}"
            seen.add(key)
            lines.append(item)
        return lines or "the input file holds no requests"

    async def retrieve_openai(self, request: Request) -> Response:
        _, refused = await self._begin(request, "openai")
        batch = self.openai.get(request.path_params["batch_id"])
        if refused is not None or batch is None:
            return refused or _error("openai", 404, "no such batch")
        self.controls.polled.set()
        status, now = batch["status"], int(time.time())
        if status == "validating":
            lines = self._lines(batch)
            if isinstance(lines, str) or self.controls.end_as == "failed":
                message = lines if isinstance(lines, str) else "the batch failed validation"
                batch["errors"] = {
                    "object": "list",
                    "data": [{"code": "invalid_request", "message": message}],
                }
                batch.update(status="failed", failed_at=now)
            else:
                batch.update(status="in_progress", in_progress_at=now)
                batch["request_counts"]["total"] = len(lines)
        elif status == "in_progress" and not self.controls.hold:
            if self.controls.end_as in ("expired", "cancelled"):
                await self._finish_openai(batch, self.controls.end_as)
            else:
                batch.update(status="finalizing", finalizing_at=now)
        elif status == "finalizing":
            await self._finish_openai(batch, "completed")
        elif status == "cancelling":
            await self._finish_openai(batch, "cancelled")
        return JSONResponse(batch)

    async def _finish_openai(self, batch: dict[str, Any], end: str) -> None:
        lines = self._lines(batch)
        assert not isinstance(lines, str)
        run = lines if end == "completed" else lines[: self.controls.finish_only]
        output, errors = [], []
        for item in run:
            recorded = LLMRequest("openai", batch["endpoint"], item["body"], {BATCH_HEADER: batch["id"]})
            reply = await self.answer(recorded)
            line: dict[str, Any] = {
                "id": self._id("batch_req_"),
                "custom_id": item["custom_id"],
                "error": None,
            }
            if reply.status != 200:
                error = {
                    "error": {
                        "message": reply.error or "error",
                        "type": "invalid_request_error",
                        "code": None,
                    }
                }
                line["response"] = {
                    "status_code": reply.status,
                    "request_id": self._id("req_"),
                    "body": error,
                }
                errors.append(line)
            else:
                body = self.body_for(recorded, reply)
                line["response"] = {"status_code": 200, "request_id": self._id("req_"), "body": body}
                output.append(line)
        code = "batch_expired" if end == "expired" else "batch_cancelled"
        for item in lines[len(run) :]:
            message = f"This request could not be executed before the batch was {end}."
            errors.append(
                {
                    "id": self._id("batch_req_"),
                    "custom_id": item["custom_id"],
                    "response": None,
                    "error": {"code": code, "message": message},
                }
            )
        for name, items in (("output_file_id", output), ("error_file_id", errors)):
            if items:
                data = "".join(json.dumps(i) + "\n" for i in items).encode()
                batch[name] = self._store_file(f"{batch['id']}_{name}.jsonl", "batch_output", data)["id"]
        batch["request_counts"].update(completed=len(output), failed=len(errors))
        batch.update(status=end, **{f"{end}_at": int(time.time())})

    async def cancel_openai(self, request: Request) -> Response:
        _, refused = await self._begin(request, "openai")
        batch = self.openai.get(request.path_params["batch_id"])
        if refused is not None or batch is None:
            return refused or _error("openai", 404, "no such batch")
        if batch["status"] in ("validating", "in_progress", "finalizing"):
            batch.update(status="cancelling", cancelling_at=int(time.time()))
        return JSONResponse(batch)


def _error(fmt: WireFormat, status: int, message: str) -> Response:
    from judge.testing.anthropic_wire import error_body

    body = (
        error_body(status, message)
        if fmt == "anthropic"
        else {"error": {"message": message, "type": "invalid_request_error", "code": status}}
    )
    return JSONResponse(body, status_code=status)
