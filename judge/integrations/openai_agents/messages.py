"""The OpenAI Agents SDK's items as the chat messages judge's transcript reader understands.

The SDK keeps a run's history as Responses API input items (``message`` items with
``input_text``/``output_text`` parts, ``function_call``, ``function_call_output``, ...);
:func:`judge.integrations.stop_gate.render_messages` reads OpenAI Chat Completions
messages. :func:`chat_messages` converts: a call becomes an assistant message with
``tool_calls``, its output a ``tool`` message, a message its role and text; items with
neither (reasoning, hosted tools' calls) are shown by their type.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

_CALLS = ("function_call", "custom_tool_call", "computer_call", "local_shell_call", "shell_call")
_OUTPUTS = (
    "function_call_output",
    "custom_tool_call_output",
    "computer_call_output",
    "local_shell_call_output",
)


def _plain(item: Any) -> Any:
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        try:
            return dump(mode="json", exclude_none=True)
        except Exception:  # an item the SDK itself cannot dump: shown by its type
            return {"type": type(item).__name__}
    return item


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") or p.get("refusal") for p in content if isinstance(p, dict)]
        return "\n".join(str(p) for p in parts if p)
    return "" if content is None else json.dumps(content, ensure_ascii=False, default=str)


def chat_messages(items: Iterable[Any]) -> list[dict[str, Any]]:
    """OpenAI chat messages for a list of the SDK's input items (dicts or its models)."""
    out: list[dict[str, Any]] = []
    for raw in items:
        item = _plain(raw)
        if not isinstance(item, dict):
            out.append({"role": "user", "content": str(item)})
            continue
        kind = item.get("type")
        if kind in _CALLS:
            arguments = item.get("arguments", item.get("input", item.get("action")))
            call = {
                "name": item.get("name", kind),
                "arguments": _text(arguments) if not isinstance(arguments, str) else arguments,
            }
            out.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": item.get("call_id", ""), "type": "function", "function": call}],
                }
            )
        elif kind in _OUTPUTS:
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": item.get("call_id", ""),
                    "content": _text(item.get("output")),
                }
            )
        elif "role" in item:
            out.append({"role": str(item["role"]), "content": _text(item.get("content"))})
        elif kind:
            out.append({"role": "assistant", "content": f"[{kind}]"})
    return out
