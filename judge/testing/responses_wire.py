"""The OpenAI Responses API wire format of the test model server (``POST /v1/responses``).

What clients that speak only this API need (OpenAI's Codex CLI, ``client.responses`` of the
``openai`` SDK): the request's ``input`` items (messages, ``function_call_output``) are
recorded as they come; the answer is a ``response`` object whose ``output`` holds a
``message`` item with the reply's text and one ``function_call`` item per tool call - whole,
or streamed as server-sent events when the request says ``"stream": true``:
``response.created``, per item ``response.output_item.added``, the text's
``content_part.added`` / ``output_text.delta`` / ``output_text.done`` /
``content_part.done`` or the call's ``function_call_arguments.delta`` / ``.done``,
``response.output_item.done``, then ``response.completed``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

from judge.testing.llm_replies import LLMRequest, Reply


def output_items(reply: Reply, new_id: Callable[[], str]) -> list[dict[str, Any]]:
    """The response's output: the text as a ``message`` item, then each tool call."""
    items: list[dict[str, Any]] = []
    if reply.text is not None:
        part = {"type": "output_text", "text": reply.text, "annotations": []}
        items.append(
            {
                "type": "message",
                "id": f"msg_{new_id()}",
                "role": "assistant",
                "status": "completed",
                "content": [part],
            }
        )
    for spec in reply.tool_calls:
        items.append(
            {
                "type": "function_call",
                "id": f"fc_{new_id()}",
                "call_id": spec.id or f"call_{new_id()}",
                "name": spec.name,
                "arguments": json.dumps(spec.arguments),
                "status": "completed",
            }
        )
    return items


def response(
    request: LLMRequest, items: list[dict[str, Any]], response_id: str, usage: tuple[int, int]
) -> dict[str, Any]:
    """A whole response object."""
    return {
        "id": response_id,
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed",
        "model": request.model,
        "output": items,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": usage[0],
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": usage[1],
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage[0] + usage[1],
        },
    }


def _item_events(index: int, item: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if item["type"] == "message":
        yield {"type": "response.output_item.added", "output_index": index, "item": {**item, "content": []}}
        text = item["content"][0]["text"]
        where = {"item_id": item["id"], "output_index": index, "content_index": 0}
        empty = {"type": "output_text", "text": "", "annotations": []}
        yield {"type": "response.content_part.added", **where, "part": empty}
        if text:
            yield {"type": "response.output_text.delta", **where, "delta": text, "logprobs": []}
        yield {"type": "response.output_text.done", **where, "text": text, "logprobs": []}
        yield {"type": "response.content_part.done", **where, "part": item["content"][0]}
    else:
        yield {"type": "response.output_item.added", "output_index": index, "item": {**item, "arguments": ""}}
        where = {"item_id": item["id"], "output_index": index}
        yield {"type": "response.function_call_arguments.delta", **where, "delta": item["arguments"]}
        yield {"type": "response.function_call_arguments.done", **where, "arguments": item["arguments"]}
    yield {"type": "response.output_item.done", "output_index": index, "item": item}


def stream_events(
    request: LLMRequest, items: list[dict[str, Any]], response_id: str, usage: tuple[int, int]
) -> Iterator[tuple[str, dict[str, Any]]]:
    """The ``(event, data)`` pairs of a streamed response, numbered in order."""
    whole = response(request, items, response_id, usage)
    started = {**whole, "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [{"type": "response.created", "response": started}]
    for index, item in enumerate(items):
        events += _item_events(index, item)
    events.append({"type": "response.completed", "response": whole})
    for number, event in enumerate(events):
        yield event["type"], {**event, "sequence_number": number}
