"""The session logs of other agent hosts, rendered to readable text, with the agent's last answer.

* ``codex`` - Codex CLI's rollout JSONL (``{"type": "response_item", "payload": {...}}``
  lines: messages with ``input_text``/``output_text`` parts, ``function_call`` and
  ``function_call_output`` items; the rest - session metadata, token counts, events - is
  left out);
* ``gemini`` - Gemini CLI's chat JSONL (a metadata line, ``{"$set": {"messages": [...]}}``
  lines replacing the message list, message records - ``user`` / ``gemini`` / ``info`` /
  ``error`` - updated in place by id, each ``gemini`` record with its ``toolCalls``);
* ``copilot`` - Copilot CLI's ``events.jsonl`` (``user.message``, ``assistant.message`` with
  ``toolRequests``, ``tool.execution_complete``; hook and usage events left out);
* anything else - judge's generic rendering (:mod:`judge.transcripts.formats`).

:func:`render_host_log` streams the file (a Gemini log is held as its message list) into
a text file and returns the agent's last answer, for hosts whose Stop input does not carry
it. Unreadable lines are shown as they are; nothing here raises on what a file holds.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from judge.files import NestedTooDeeply, load_json, open_regular, text_lines
from judge.transcripts.formats import MAX_LINE_BYTES, TOO_DEEP, render_lines

#: Characters kept of one tool input or output.
MAX_PART_CHARS = 8000


def _clip(value: Any) -> str:
    raw = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return (
        raw if len(raw) <= MAX_PART_CHARS else f"{raw[:MAX_PART_CHARS]}… [+{len(raw) - MAX_PART_CHARS} chars]"
    )


def _labelled(label: str, body: str) -> Iterator[str]:
    lines = body.split("\n") if body else [""]
    yield f"{label}: {lines[0]}"
    for line in lines[1:]:
        yield f"    {line}"


def _objects(path: Path) -> Iterator[Any]:
    """Each line's JSON value (a line that is not JSON: the text itself)."""
    with open_regular(path, "transcript") as handle:
        for raw in text_lines(handle, MAX_LINE_BYTES):
            line = raw.strip()
            if not line:
                continue
            try:
                yield load_json(line)
            except NestedTooDeeply:
                yield TOO_DEEP
            except ValueError:
                yield line


def _parts_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = [
        str(p.get("text", "")) for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
    ]
    return "\n".join(texts)


class _Last:
    """The last answer seen so far."""

    def __init__(self) -> None:
        self.text: str | None = None


# ---------------------------------------------------------------------------
# Codex rollout


def _codex_item(item: dict[str, Any], last: _Last) -> Iterator[str]:
    kind = item.get("type")
    if kind == "message":
        role = str(item.get("role") or "message")
        body = _parts_text(item.get("content"))
        if role == "developer":
            yield f"DEVELOPER: [instructions, {len(body)} characters]"
            return
        if role == "assistant" and body.strip():
            last.text = body
        yield from _labelled(role.upper(), body)
    elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
        args = item.get("arguments", item.get("input", item.get("action")))
        yield f"TOOL CALL {item.get('name', kind)} [{item.get('call_id', '')}]: {_clip(args)}"
    elif kind in ("function_call_output", "custom_tool_call_output"):
        output = item.get("output")
        yield from _labelled(f"TOOL RESULT [{item.get('call_id', '')}]", _clip(output))
    elif kind == "reasoning":
        summary = " ".join(_parts_text(item.get("summary")).split())
        if summary:
            yield f"ASSISTANT (thinking): {summary[:240]}"


def _codex(path: Path, last: _Last) -> Iterator[str]:
    for obj in _objects(path):
        if not isinstance(obj, dict):
            yield str(obj)
        elif obj.get("type") == "response_item" and isinstance(obj.get("payload"), dict):
            yield from _codex_item(obj["payload"], last)


# ---------------------------------------------------------------------------
# Gemini chat log


def _gemini_messages(path: Path) -> list[dict[str, Any]]:
    messages: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    for obj in _objects(path):
        if not isinstance(obj, dict):
            continue
        update = obj.get("$set")
        if isinstance(update, dict) and isinstance(update.get("messages"), list):
            messages, order = {}, []
            for message in update["messages"]:
                if isinstance(message, dict):
                    key = str(message.get("id") or len(order))
                    messages[key] = message
                    order.append(key)
        elif "type" in obj and "content" in obj:
            key = str(obj.get("id") or f"line-{len(order)}")
            if key not in messages:
                order.append(key)
            messages[key] = obj
    return [messages[key] for key in order]


def _only_tool_results(content: Any) -> bool:
    """A user record that only sends tool results back (already shown with their calls)."""
    return (
        isinstance(content, list)
        and bool(content)
        and all(isinstance(p, dict) and "functionResponse" in p for p in content)
    )


def _gemini(path: Path, last: _Last) -> Iterator[str]:
    for message in _gemini_messages(path):
        kind = str(message.get("type") or "message")
        body = _parts_text(message.get("content"))
        if kind != "gemini":
            if not _only_tool_results(message.get("content")):
                yield from _labelled(kind.upper(), body)
        elif body.strip():
            yield from _labelled("ASSISTANT", body)
            last.text = body
        for call in message.get("toolCalls") or []:
            if not isinstance(call, dict):
                continue
            yield f"TOOL CALL {call.get('name')} [{call.get('id', '')}]: {_clip(call.get('args'))}"
            status = "TOOL ERROR" if call.get("status") == "error" else "TOOL RESULT"
            yield from _labelled(f"{status} [{call.get('id', '')}]", _clip(call.get("result")))


# ---------------------------------------------------------------------------
# Copilot events.jsonl


def _copilot(path: Path, last: _Last) -> Iterator[str]:
    for obj in _objects(path):
        if not isinstance(obj, dict) or not isinstance(obj.get("data"), dict):
            continue
        kind, data = obj.get("type"), obj["data"]
        if kind == "user.message":
            yield from _labelled("USER", str(data.get("content") or ""))
        elif kind == "assistant.message":
            body = str(data.get("content") or "")
            if body.strip():
                last.text = body
                yield from _labelled("ASSISTANT", body)
            for call in data.get("toolRequests") or []:
                if isinstance(call, dict):
                    args = _clip(call.get("arguments"))
                    yield f"TOOL CALL {call.get('name')} [{call.get('toolCallId', '')}]: {args}"
        elif kind == "tool.execution_complete":
            result = data.get("result")
            shown = result.get("content") if isinstance(result, dict) else result
            label = "TOOL RESULT" if data.get("success", True) else "TOOL ERROR"
            yield from _labelled(f"{label} [{data.get('toolCallId', '')}]", _clip(shown))


# ---------------------------------------------------------------------------


def _generic_last(path: Path) -> str | None:
    """The last assistant text of a JSONL of messages (``role``, or ``message.role``)."""
    found: str | None = None
    for obj in _objects(path):
        message = (
            obj.get("message") if isinstance(obj, dict) and isinstance(obj.get("message"), dict) else obj
        )
        if isinstance(message, dict) and message.get("role") == "assistant":
            body = _parts_text(message.get("content"))
            if body.strip():
                found = body
    return found


RENDERERS = {"codex": _codex, "gemini": _gemini, "copilot": _copilot}


def render_host_log(fmt: str, path: Path, out: TextIO) -> str | None:
    """Write ``path`` (a host's session log in format ``fmt``) as readable lines to ``out``;
    return the agent's last answer found in it (``None``: none). ``OSError`` when the file
    cannot be read."""
    renderer = RENDERERS.get(fmt)
    if renderer is None:
        for line in render_lines(path):
            out.write(line + "\n")
        return _generic_last(path)
    last = _Last()
    for line in renderer(path, last):
        out.write(line + "\n")
    return last.text
