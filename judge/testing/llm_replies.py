"""What the test model server answers (:class:`Reply` and its helpers) and what it records
(:class:`LLMRequest`), independent of the wire format."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from typing import Any, Literal

WireFormat = Literal["openai", "anthropic"]


@dataclass(frozen=True)
class ToolCallSpec:
    """A tool call the fake model makes."""

    name: str
    arguments: dict[str, Any]
    id: str | None = None


@dataclass(frozen=True)
class Reply:
    """What the server answers to one request.

    ``status`` other than 200 sends an error body in the request's wire format (with
    ``retry_after`` as the ``retry-after`` header when set). ``delay`` waits before
    answering; ``hang`` waits (almost) for ever. Text is cut before the first of the
    request's stop sequences, if any.
    """

    text: str | None = None
    tool_calls: tuple[ToolCallSpec, ...] = ()
    status: int = 200
    error: str | None = None
    retry_after: float | None = None
    delay: float = 0.0
    hang: bool = False
    input_tokens: int | None = None
    output_tokens: int | None = None
    raw: str | None = None
    #: the stop sequence the text was cut at (set by the server, from the request's
    #: ``stop`` / ``stop_sequences``, as real servers do)
    stopped_at: str | None = None


def say(text: str, *, delay: float = 0.0) -> Reply:
    """A text answer (for a verdict: ``say('{"ok": true}')``)."""
    return Reply(text=text, delay=delay)


def verdict(ok: bool, reason: str | None = None) -> Reply:
    """A verdict answer: ``{"ok": ..., "reason": ...}``."""
    body: dict[str, Any] = {"ok": ok}
    if reason is not None:
        body["reason"] = reason
    return Reply(text=json.dumps(body))


def call(name: str, /, **arguments: Any) -> Reply:
    """One tool call (combine several with :func:`calls` for parallel tool calls)."""
    return Reply(tool_calls=(ToolCallSpec(name, arguments),))


def calls(*specs: tuple[str, dict[str, Any]], text: str | None = None) -> Reply:
    """Parallel tool calls: ``calls(("GrepSearch", {...}), ("ReadFile", {...}))``."""
    return Reply(text=text, tool_calls=tuple(ToolCallSpec(n, a) for n, a in specs))


def fail(status: int = 500, message: str = "simulated failure", *, retry_after: float | None = None) -> Reply:
    """An HTTP error (429 with ``retry_after`` for rate limits, 5xx, 404, ...)."""
    return Reply(status=status, error=message, retry_after=retry_after)


def hang(seconds: float = 3600.0) -> Reply:
    """Never answer (until ``seconds`` pass or the server stops)."""
    return Reply(hang=True, delay=seconds)


@dataclass
class LLMRequest:
    """One recorded request."""

    format: WireFormat
    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    received_at: float = field(default_factory=time.time)

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation: ``messages``, or a Responses API request's ``input`` items."""
        value = self.body.get("messages", self.body.get("input"))
        if isinstance(value, str):  # a Responses API request's plain-text input
            return [{"role": "user", "content": value}]
        return [m for m in value if isinstance(m, dict)] if isinstance(value, list) else []

    @property
    def system(self) -> str:
        """The system prompt (either format)."""
        if self.format == "anthropic":
            system = self.body.get("system", "")
            if isinstance(system, list):
                return "\n".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
            return str(system)
        if isinstance(self.body.get("instructions"), str):  # Responses API
            return str(self.body["instructions"])
        return "\n".join(str(m.get("content") or "") for m in self.messages if m.get("role") == "system")

    @property
    def tool_names(self) -> list[str]:
        names = []
        for tool in self.body.get("tools") or []:
            function = tool.get("function", tool) if isinstance(tool, dict) else {}
            names.append(str(function.get("name", "")))
        return names

    @property
    def tool_results(self) -> list[str]:
        """Texts of the tool results sent back to the model (either format)."""
        out: list[str] = []
        for message in self.messages:
            if message.get("role") == "tool":
                out.append(_text_of(message.get("content")))
            if message.get("type") == "function_call_output":  # Responses API
                out.append(_text_of(message.get("output")))
            content = message.get("content")
            if isinstance(content, list):
                out += [
                    _text_of(b.get("content"))
                    for b in content
                    if isinstance(b, dict) and b.get("type") == "tool_result"
                ]
        return out

    @property
    def text(self) -> str:
        """Everything the request says, as one string (system, messages, tool results)."""
        parts = [self.system]
        for message in self.messages:
            parts.append(_text_of(message.get("content")))
        parts += self.tool_results
        return "\n".join(p for p in parts if p)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for block in content:
            if isinstance(block, dict):
                if block.get("type") in ("text", "input_text", "output_text"):
                    texts.append(str(block.get("text", "")))
                elif block.get("type") == "tool_result":
                    texts.append(_text_of(block.get("content")))
        return "\n".join(texts)
    return "" if content is None else str(content)


def cut_at_stop(reply: Reply, body: dict[str, Any]) -> Reply:
    """``reply`` with its text ending before the first of the request's stop sequences
    (OpenAI ``stop``: a string or a list; Anthropic ``stop_sequences``), as servers do."""
    sequences = body.get("stop", body.get("stop_sequences"))
    if isinstance(sequences, str):
        sequences = [sequences]
    if not reply.text or not isinstance(sequences, list):
        return reply
    found = [(reply.text.find(s), s) for s in sequences if isinstance(s, str) and s and s in reply.text]
    if not found:
        return reply
    at, sequence = min(found)
    return replace(reply, text=reply.text[:at], stopped_at=sequence)
