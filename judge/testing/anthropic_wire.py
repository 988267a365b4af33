"""The Anthropic Messages API wire format of the test model server: a whole message, the
server-sent event stream a ``"stream": true`` request gets, token counting and errors.

The stream is the one the real API sends and Claude Code reads: ``message_start``, per
content block ``content_block_start`` / ``content_block_delta`` (``text_delta`` for text,
``input_json_delta`` for a ``tool_use`` input, sent in pieces) / ``content_block_stop``,
then ``message_delta`` (``stop_reason``, output tokens) and ``message_stop``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from judge.testing.llm_replies import LLMRequest, Reply

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}

# Pieces of a tool_use input per input_json_delta event (the real API sends small ones).
JSON_CHUNK = 16


def error_body(status: int, message: str) -> dict[str, Any]:
    """The error object for an HTTP status."""
    return {"type": "error", "error": {"type": ERROR_TYPES.get(status, "api_error"), "message": message}}


def content_blocks(reply: Reply, new_id: Callable[[], str]) -> list[dict[str, Any]]:
    """The assistant's content blocks: the text (if any), then one ``tool_use`` per call."""
    blocks: list[dict[str, Any]] = []
    if reply.text is not None:
        blocks.append({"type": "text", "text": reply.text})
    blocks += [
        {"type": "tool_use", "id": spec.id or f"toolu_{new_id()}", "name": spec.name, "input": spec.arguments}
        for spec in reply.tool_calls
    ]
    return blocks


def stop_reason(reply: Reply) -> str:
    if reply.tool_calls:
        return "tool_use"
    return "stop_sequence" if reply.stopped_at is not None else "end_turn"


def message(
    request: LLMRequest, blocks: list[dict[str, Any]], reply: Reply, message_id: str, usage: tuple[int, int]
) -> dict[str, Any]:
    """A whole (non-streamed) message."""
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": request.model,
        "content": blocks,
        "stop_reason": stop_reason(reply),
        "stop_sequence": reply.stopped_at,
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
    }


def stream_events(
    request: LLMRequest, blocks: list[dict[str, Any]], reply: Reply, message_id: str, usage: tuple[int, int]
) -> Iterator[tuple[str, dict[str, Any]]]:
    """The ``(event, data)`` pairs of a streamed message, in order."""
    start = message(request, [], reply, message_id, (usage[0], 1))
    start["stop_reason"] = None
    start["usage"].update({"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0})
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            yield "content_block_start", _block_start(index, {"type": "text", "text": ""})
            if block["text"]:
                yield "content_block_delta", _delta(index, {"type": "text_delta", "text": block["text"]})
        else:
            empty = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            yield "content_block_start", _block_start(index, empty)
            raw = json.dumps(block["input"])
            for at in range(0, len(raw), JSON_CHUNK):
                piece = {"type": "input_json_delta", "partial_json": raw[at : at + JSON_CHUNK]}
                yield "content_block_delta", _delta(index, piece)
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason(reply), "stop_sequence": reply.stopped_at},
            "usage": {"output_tokens": usage[1]},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def encode_sse(events: Iterator[tuple[str, dict[str, Any]]]) -> Iterator[bytes]:
    """Server-sent event frames."""
    for event, data in events:
        yield f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def count_tokens(body: dict[str, Any]) -> dict[str, Any]:
    """An answer to ``POST /v1/messages/count_tokens`` (about 4 characters a token)."""
    return {"input_tokens": max(1, len(json.dumps(body)) // 4)}


def _block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}
