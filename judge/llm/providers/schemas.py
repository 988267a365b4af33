"""The JSON schemas a provider may send as structured output.

- the verdict (:data:`VERDICT_SCHEMA`), when no tool can be called;
- one tool call written as text (:func:`call_schema`), where a server ignores
  ``tool_choice: "required"``;
- a verdict OR one call (:func:`answer_or_call_schema`), on the free turns of such a
  server: it enforces a schema as a grammar, so every reply is either a call the judge
  can run or a verdict it can read.

A small model on a slow CPU can also ramble: asked for a reason it repeats itself until
the answer-length cap, at some seconds per hundred tokens. Servers that turn the schema
into a grammar (llama.cpp, vLLM, Ollama) stop it with two shapes (:func:`limited`): an
allow is ``{"ok": true}`` alone, and a block's reason has a ``maxLength``. OpenAI's and
Anthropic's strict schemas do not accept that keyword, so these shapes are only sent to
local servers (:func:`reason_limit`) and dropped for good where a server rejects them.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from judge.errors import HookError

if TYPE_CHECKING:
    from judge.llm.providers.base import ToolSpec

#: One citation of a rejection (hooks with ``evidence: required``, :mod:`judge.llm.evidence`).
CITATION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "line": {"type": "integer", "description": "transcript line number, as ReadFile shows it"},
        "quote": {"type": "string", "description": "text copied exactly from that line"},
    },
    "required": ["line", "quote"],
    "additionalProperties": False,
}

#: The verdict schema requested as structured output where the provider supports it.
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "ok": {"type": "boolean", "description": "true to allow, false to block"},
        "reason": {
            "type": ["string", "null"],
            "description": "when ok is false: what the agent must still do",
        },
        "impossible": {
            "type": ["boolean", "null"],
            "description": "Stop only, when ok is false: true when the work cannot be finished "
            "without the user (the reason then says what they must provide or decide)",
        },
        "citations": {
            "type": ["array", "null"],
            "items": CITATION_SCHEMA,
            "description": "when ok is false and evidence is required: the transcript lines that prove it",
        },
    },
    "required": ["ok", "reason", "impossible", "citations"],
    "additionalProperties": False,
}

#: The reason's length limit for local servers (characters), ``JUDGE_MAX_REASON_CHARS``.
DEFAULT_REASON_CHARS = 400
REASON_CHARS_VAR = "JUDGE_MAX_REASON_CHARS"


def local_server(base_url: str | None) -> bool:
    """Whether ``base_url`` points at this machine or a private network (a local model
    server, not a hosted API)."""
    if not base_url:
        return False
    host = (urlsplit(base_url).hostname or "").lower()
    if host == "localhost" or host.endswith((".localhost", ".local", ".internal")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


def reason_limit(env: Mapping[str, str], base_url: str | None) -> int | None:
    """The verdict reason's ``maxLength``: ``JUDGE_MAX_REASON_CHARS`` (0: none); unset,
    :data:`DEFAULT_REASON_CHARS` for a local server and none for a hosted API."""
    raw = env.get(REASON_CHARS_VAR, "").strip()
    if not raw:
        return DEFAULT_REASON_CHARS if local_server(base_url) else None
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value != 0 and not 40 <= value <= 100_000:
        raise HookError(f"{REASON_CHARS_VAR} must be 0 (no limit) or 40 characters or more, got {raw!r}")
    return value or None


#: Most citations a length-limited verdict may carry, each quote limited like the reason
#: (evidence checking asks for 1 to 3, see :mod:`judge.llm.evidence`).
LIMITED_CITATIONS = 5


def limited(schema: Mapping[str, Any], max_reason: int | None) -> dict[str, Any]:
    """A verdict schema (OpenAI's or Anthropic's form) whose free text is bounded, as two
    shapes: an allow is ``{"ok": true}`` and nothing else (no reason to ramble in); a
    block has ``ok: false`` and a reason of at most ``max_reason`` characters, and may
    have up to :data:`LIMITED_CITATIONS` citations, each quote bounded like the reason.
    ``None``: the schema unchanged."""
    if max_reason is None:
        return dict(schema)
    props = dict(schema["properties"])
    props["reason"] = {**props["reason"], "type": "string", "minLength": 1, "maxLength": max_reason}
    items = props["citations"]["items"]
    quote = {**items["properties"]["quote"], "maxLength": max_reason}
    items = {**items, "properties": {**items["properties"], "quote": quote}}
    props["citations"] = {**props["citations"], "items": items, "maxItems": LIMITED_CITATIONS}
    allow = {
        "type": "object",
        "properties": {"ok": {**props["ok"], "enum": [True]}},
        "required": ["ok"],
        "additionalProperties": False,
    }
    props["ok"] = {**props["ok"], "enum": [False]}
    block = {**schema, "properties": props, "required": ["ok", "reason"]}
    return {"anyOf": [allow, block]}


def _call_shapes(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "type": "object",
            "properties": {"name": {"type": "string", "enum": [t.name]}, "arguments": t.parameters},
            "required": ["name", "arguments"],
            "additionalProperties": False,
        }
        for t in tools
    ]


def call_schema(tools: Sequence[ToolSpec]) -> dict[str, Any]:
    """A JSON schema for ONE call of one of ``tools``, written as text: ``{"name": ...,
    "arguments": {...}}`` (the form :mod:`judge.llm.written_calls` reads). Sent as structured
    output to make a model call a tool where the server ignores ``tool_choice: required``:
    a server that enforces a schema as a grammar (llama.cpp, vLLM, Ollama) then cannot
    answer anything else."""
    shapes = _call_shapes(tools)
    return shapes[0] if len(shapes) == 1 else {"anyOf": shapes}


def answer_or_call_schema(tools: Sequence[ToolSpec], verdict: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON schema for either a verdict or ONE call of one of ``tools`` (written as text),
    for the turns where the model may do either on a server that ignores ``tool_choice``."""
    return {"anyOf": [*verdict.get("anyOf", [verdict]), *_call_shapes(tools)]}
