"""Anthropic Message Batches on the test model server (see :mod:`judge.testing.batch_wire`):
``POST /v1/messages/batches``, ``GET /v1/messages/batches/{id}`` (the second retrieve ends
it: ``in_progress`` → ``ended``, with ``request_counts`` and ``results_url``),
``POST .../cancel`` (``canceling``, then ended with the rest ``canceled``) and
``GET .../results`` (JSONL: ``succeeded`` / ``errored`` / ``canceled`` / ``expired``)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from judge.testing.anthropic_wire import error_body
from judge.testing.llm_replies import LLMRequest

if TYPE_CHECKING:
    from judge.testing.batch_wire import BatchStore

ANTHROPIC_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
#: The header a batch line is recorded with (in ``LLMServer.requests``): its batch's id.
BATCH_HEADER = "x-batch-id"


class MessageBatches:
    """The message batches of one server."""

    def __init__(self, store: BatchStore) -> None:
        self.store = store
        self.anthropic: dict[str, dict[str, Any]] = {}
        self.results: dict[str, list[dict[str, Any]]] = {}

    def routes(self) -> list[Route]:
        return [
            Route("/v1/messages/batches", self.create_anthropic, methods=["POST"]),
            Route("/v1/messages/batches/{batch_id}", self.retrieve_anthropic, methods=["GET"]),
            Route("/v1/messages/batches/{batch_id}/cancel", self.cancel_anthropic, methods=["POST"]),
            Route("/v1/messages/batches/{batch_id}/results", self.results_anthropic, methods=["GET"]),
        ]

    async def create_anthropic(self, request: Request) -> Response:
        body, refused = await self.store._begin(request, "anthropic", json_body=True)
        if refused is not None:
            return refused
        requests = body.get("requests")
        if not isinstance(requests, list) or not requests:
            return _error("anthropic", 400, "requests: a non-empty list is required")
        seen: set[str] = set()
        for index, item in enumerate(requests):
            key = item.get("custom_id") if isinstance(item, dict) else None
            params = item.get("params") if isinstance(item, dict) else None
            if not isinstance(key, str) or not ANTHROPIC_ID.match(key) or key in seen:
                return _error(
                    "anthropic",
                    400,
                    f"requests.{index}.custom_id: must be unique and match {ANTHROPIC_ID.pattern}",
                )
            if not isinstance(params, dict) or not {"model", "max_tokens", "messages"} <= set(params):
                return _error(
                    "anthropic", 400, f"requests.{index}.params: model, max_tokens and messages are required"
                )
            seen.add(key)
        now = datetime.now(UTC)
        batch_id = self.store._id("msgbatch_")
        self.anthropic[batch_id] = {
            "id": batch_id,
            "type": "message_batch",
            "processing_status": "in_progress",
            "request_counts": {
                "processing": len(requests),
                "succeeded": 0,
                "errored": 0,
                "canceled": 0,
                "expired": 0,
            },
            "ended_at": None,
            "created_at": now.isoformat(),
            "expires_at": (now + timedelta(hours=24)).isoformat(),
            "archived_at": None,
            "cancel_initiated_at": None,
            "results_url": None,
            "_requests": requests,
            "_seen": 0,
        }
        return JSONResponse(_public(self.anthropic[batch_id]))

    async def retrieve_anthropic(self, request: Request) -> Response:
        _, refused = await self.store._begin(request, "anthropic")
        batch = self.anthropic.get(request.path_params["batch_id"])
        if refused is not None or batch is None:
            return refused or _error("anthropic", 404, "no such message batch")
        self.store.controls.polled.set()
        batch["_seen"] += 1
        if batch["processing_status"] == "canceling":
            await self._finish_anthropic(batch, "canceled")
        elif (
            batch["processing_status"] == "in_progress"
            and batch["_seen"] > 1
            and not self.store.controls.hold
        ):
            end = {"expired": "expired", "cancelled": "canceled"}.get(self.store.controls.end_as)
            await self._finish_anthropic(batch, end)
        return JSONResponse(_public(batch))

    async def _finish_anthropic(self, batch: dict[str, Any], end: str | None) -> None:
        requests = batch["_requests"]
        run = requests if end is None else requests[: self.store.controls.finish_only]
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        results = []
        for item in run:
            recorded = LLMRequest("anthropic", "/v1/messages", item["params"], {BATCH_HEADER: batch["id"]})
            reply = await self.store.answer(recorded)
            if reply.status != 200:
                result: dict[str, Any] = {
                    "type": "errored",
                    "error": error_body(reply.status, reply.error or "error"),
                }
                counts["errored"] += 1
            else:
                result = {"type": "succeeded", "message": self.store.body_for(recorded, reply)}
                counts["succeeded"] += 1
            results.append({"custom_id": item["custom_id"], "result": result})
        for item in requests[len(run) :]:
            assert end is not None
            results.append({"custom_id": item["custom_id"], "result": {"type": end}})
            counts[end] += 1
        self.results[batch["id"]] = results
        batch.update(
            processing_status="ended",
            request_counts=counts,
            ended_at=datetime.now(UTC).isoformat(),
            results_url=f"{self.store.base_url()}/v1/messages/batches/{batch['id']}/results",
        )

    async def cancel_anthropic(self, request: Request) -> Response:
        _, refused = await self.store._begin(request, "anthropic")
        batch = self.anthropic.get(request.path_params["batch_id"])
        if refused is not None or batch is None:
            return refused or _error("anthropic", 404, "no such message batch")
        if batch["processing_status"] == "in_progress":
            batch.update(processing_status="canceling", cancel_initiated_at=datetime.now(UTC).isoformat())
        return JSONResponse(_public(batch))

    async def results_anthropic(self, request: Request) -> Response:
        _, refused = await self.store._begin(request, "anthropic")
        found = self.results.get(request.path_params["batch_id"])
        if refused is not None or found is None:
            return refused or _error("anthropic", 404, "the message batch has no results yet")
        data = "".join(json.dumps(item) + "\n" for item in found)
        return Response(data, media_type="application/x-jsonl")


def _public(batch: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in batch.items() if not k.startswith("_")}


def _error(fmt: str, status: int, message: str) -> Response:
    return JSONResponse(error_body(status, message), status_code=status)
