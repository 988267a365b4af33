"""Render agent transcripts to readable, line-oriented text for the judge's tools.

Supported shapes (detected from the file's beginning):

* plain text — used as is;
* JSON: an OpenAI-style message list, ``{"messages": [...]}``, or τ-bench results
  (items with a ``traj`` message list, ``task_id``, ``reward``);
* JSONL: one message (or any object) per line;
* Claude Code JSONL session logs, rendered by :mod:`judge.transcripts.claude_code`.

JSONL and text are streamed, so memory stays bounded however large the file is
(:mod:`judge.transcripts.prepared` keeps the rendered copy).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

from judge.files import NestedTooDeeply, load_json, open_regular, text_lines

Format = Literal["text", "json", "jsonl", "claude-code"]

RENDER_VERSION = "1"
SNIFF_BYTES = 64 * 1024
SNIFF_LINES = 50
#: Whole-document JSON is parsed in memory; larger documents are treated as text.
MAX_JSON_BYTES = 200 * 1024 * 1024
#: What a transcript line (or document) nested too deeply to render is shown as.
TOO_DEEP = "[a transcript entry nested too deeply to render was left out]"
#: Longer lines are read in pieces of this size (each rendered as text), so one huge
#: line cannot fill memory.
MAX_LINE_BYTES = 16 << 20
CLAUDE_CODE_TYPES = frozenset({"user", "assistant", "summary", "system"})


def _is_claude_code(obj: Any) -> bool:
    return (
        isinstance(obj, dict)
        and obj.get("type") in CLAUDE_CODE_TYPES
        and ("message" in obj or "sessionId" in obj)
    )


def detect_format(path: Path) -> Format:
    """Which renderer a transcript needs (sniffs only the beginning of the file)."""
    with open_regular(path, "transcript") as handle:
        raw = handle.read(SNIFF_BYTES)
        size = os.fstat(handle.fileno()).st_size
    head = raw.decode("utf-8", "replace")
    stripped = head.lstrip()
    if not stripped.startswith(("{", "[")):
        return "text"
    lines = [line for line in head.split("\n") if line.strip()]
    complete = lines if len(raw) < SNIFF_BYTES else lines[:-1]
    parsed: list[Any] = []
    for line in complete[:SNIFF_LINES]:
        try:
            parsed.append(load_json(line))
        except ValueError:  # not JSON, or nested too deeply
            parsed.append(None)
    objects = [obj for obj in parsed if isinstance(obj, dict)]
    one_document = len(lines) == 1 and len(raw) < SNIFF_BYTES
    if parsed and isinstance(parsed[0], dict) and 2 * len(objects) >= len(parsed) and not one_document:
        if any(_is_claude_code(obj) for obj in objects):
            return "claude-code"
        return "jsonl"
    if size <= MAX_JSON_BYTES:
        try:
            with open_regular(path, "transcript") as handle:
                load_json(handle.read(MAX_JSON_BYTES + 1))
        except ValueError:  # not JSON (or not UTF-8), or nested too deeply
            return "text"
        return "json"
    return "text"


# ---------------------------------------------------------------------------
# Rendering


def _dump(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _content_lines(content: Any) -> Iterator[str]:
    if content is None:
        return
    if isinstance(content, str):
        yield from content.splitlines() or [""]
        return
    if not isinstance(content, list):
        yield from _dump(content).splitlines()
        return
    for part in content:
        if not isinstance(part, dict):
            yield from _dump(part).splitlines()
            continue
        kind = part.get("type")
        if kind in ("text", "input_text", "output_text"):
            yield from str(part.get("text", "")).splitlines() or [""]
        elif kind == "thinking":
            yield "(thinking)"
            yield from str(part.get("thinking", "")).splitlines()
        elif kind == "tool_use":
            yield f"→ tool call {part.get('name')}({_dump(part.get('input', {}))}) [{part.get('id')}]"
        elif kind == "tool_result":
            flag = " (error)" if part.get("is_error") else ""
            yield f"← tool result [{part.get('tool_use_id')}]{flag}:"
            yield from _content_lines(part.get("content"))
        elif kind in ("image", "image_url", "input_image"):
            yield "[image]"
        else:
            yield from _dump(part).splitlines()


def render_message(message: dict[str, Any], index: int) -> Iterator[str]:
    """Readable lines for one chat message (OpenAI or Anthropic content shapes)."""
    role = str(message.get("role") or message.get("type") or "message")
    name = message.get("name")
    if role == "tool" or role == "function":
        call_id = message.get("tool_call_id")
        ident = f" [{call_id}]" if call_id else ""
        yield f"[{index}] tool result{f' {name}' if name else ''}{ident}:"
    else:
        yield f"[{index}] {role}{f' ({name})' if name else ''}:"
    yield from _content_lines(message.get("content"))
    for call in message.get("tool_calls") or []:
        if isinstance(call, dict):
            function = call.get("function") or {}
            yield (
                f"→ tool call {function.get('name')}({_dump(function.get('arguments', ''))})"
                f" [{call.get('id')}]"
            )
    legacy = message.get("function_call")
    if isinstance(legacy, dict):
        yield f"→ tool call {legacy.get('name')}({_dump(legacy.get('arguments', ''))})"
    yield ""


def _render_messages(messages: Iterable[Any]) -> Iterator[str]:
    for index, message in enumerate(messages, 1):
        if isinstance(message, dict):
            yield from render_message(message, index)
        else:
            yield f"[{index}] {_dump(message)}"
            yield ""


def _is_message_list(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(m, dict) and ("role" in m or "type" in m) for m in value[:20]
    )


def render_json_document(data: Any) -> Iterator[str]:
    """Lines for a whole JSON transcript: message list, ``{"messages"}`` or τ-bench items."""
    items = data if isinstance(data, list) else [data]
    if (
        isinstance(data, list)
        and _is_message_list(data)
        and not any(isinstance(m, dict) and "traj" in m for m in data[:5])
    ):
        yield from _render_messages(data)
        return
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("traj"), list):
            extras = ", ".join(f"{key} {item[key]}" for key in ("trial", "reward") if key in item)
            yield f"=== task {item.get('task_id')}{f' ({extras})' if extras else ''} ==="
            yield from _render_messages(item["traj"])
        elif isinstance(item, dict) and _is_message_list(item.get("messages")):
            yield from _render_messages(item["messages"])
        elif isinstance(item, dict) and "role" in item:
            yield from render_message(item, 1)
        else:
            yield from json.dumps(item, ensure_ascii=False, indent=2).splitlines()


def render_jsonl_lines(lines: Iterable[str]) -> Iterator[str]:
    """Lines for a generic JSONL transcript: messages rendered, other objects compact."""
    index = 0
    for raw in lines:
        text = raw.rstrip("\n")
        if not text.strip():
            continue
        try:
            obj = load_json(text)
        except NestedTooDeeply:
            yield TOO_DEEP
            continue
        except ValueError:
            yield text
            continue
        try:
            message = obj.get("message") if isinstance(obj, dict) else None
            if isinstance(obj, dict) and "role" in obj:
                index += 1
                rendered = list(render_message(obj, index))
            elif isinstance(message, dict) and "role" in message:
                index += 1
                rendered = list(render_message(message, index))
            else:
                rendered = [_dump(obj)]
        except (RecursionError, ValueError):  # json.dumps: "Maximum ... depth exceeded"
            rendered = [TOO_DEEP]
        yield from rendered


def _file_lines(path: Path) -> Iterator[str]:
    with open_regular(path, "transcript") as handle:
        yield from text_lines(handle, MAX_LINE_BYTES)


def render_lines(path: Path, fmt: Format | None = None) -> Iterator[str]:
    """Rendered text lines of a transcript (streaming except whole-document JSON)."""
    fmt = fmt or detect_format(path)
    if fmt == "text":
        for line in _file_lines(path):
            yield line.rstrip("\n")
    elif fmt == "json":
        with open_regular(path, "transcript") as handle:
            raw = handle.read(MAX_JSON_BYTES + 1)
        try:
            document = list(render_json_document(json.loads(raw)))
        except (RecursionError, ValueError):
            document = [TOO_DEEP]
        yield from document
    elif fmt == "claude-code":
        try:
            from judge.transcripts.claude_code import render_claude_code_lines
        except ImportError:
            yield from render_jsonl_lines(_file_lines(path))
        else:
            for rendered in render_claude_code_lines(_file_lines(path)):
                yield from rendered.splitlines() or [""]
    else:
        yield from render_jsonl_lines(_file_lines(path))
