"""Anthropic Messages with tool use (``ANTHROPIC_BASE_URL`` for gateways and test servers)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judge.decision import Usage
from judge.llm.providers.base import (
    CITATION_SCHEMA,
    VERDICT_SCHEMA,
    Completion,
    Message,
    SDKProvider,
    ToolCall,
    ToolChoice,
    ToolSpec,
    TransientError,
    answer_or_call_schema,
    call_schema,
    token_count,
    wants_answer_schema,
)
from judge.llm.providers.clients import api_settings, sdk_client

#: Anthropic's structured output wants optional fields left out of ``required``.
_ANTHROPIC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "ok": VERDICT_SCHEMA["properties"]["ok"],
        "reason": {"type": "string", "description": "when ok is false: what is missing"},
        "impossible": {
            "type": "boolean",
            "description": VERDICT_SCHEMA["properties"]["impossible"]["description"],
        },
        "citations": {
            "type": "array",
            "items": CITATION_SCHEMA,
            "description": "when ok is false and evidence is required: the transcript lines that prove it",
        },
    },
    "required": ["ok"],
    "additionalProperties": False,
}


def _to_wire(messages: list[Message]) -> tuple[str, list[dict[str, Any]]]:
    """System text and Anthropic messages (tool results grouped into one user turn)."""
    system = "\n\n".join(m.content for m in messages if m.role == "system")
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system":
            continue
        if m.role == "tool":
            block = {"type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.content}
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
            continue
        if m.role == "assistant" and m.tool_calls:
            blocks: list[dict[str, Any]] = []
            if m.content:
                blocks.append({"type": "text", "text": m.content})
            blocks += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments or {}}
                for c in m.tool_calls
            ]
            out.append({"role": "assistant", "content": blocks})
            continue
        out.append({"role": m.role, "content": m.content or "(empty)"})
    return system, out


def new_client(api_key: str, base_url: str | None) -> Any:
    """An ``AsyncAnthropic`` client (no SDK retries: :mod:`judge.llm.retry` owns them)."""
    import anthropic

    return sdk_client(anthropic, anthropic.AsyncAnthropic, api_key, base_url)


def client_settings(model: str, env: Mapping[str, str]) -> tuple[str, str | None]:
    """``(api key, base URL or None)`` from the environment; HookError without a key."""
    return api_settings(env, AnthropicProvider.key_var, AnthropicProvider.url_var, f"anthropic:{model}")


class AnthropicProvider(SDKProvider):
    """Messages API through the official ``anthropic`` SDK (async, ``max_retries=0``).

    See :class:`~judge.llm.providers.base.SDKProvider` for ``client`` and the errors.
    """

    provider = "anthropic"
    key_var = "ANTHROPIC_API_KEY"
    url_var = "ANTHROPIC_BASE_URL"
    path = "/v1/messages"
    structured_field = "output_config"
    stop_field = "stop_sequences"
    verdict_form = _ANTHROPIC_SCHEMA
    new_client = staticmethod(new_client)

    @staticmethod
    def load_sdk() -> tuple[Any, type[Exception]]:
        import anthropic

        return anthropic, anthropic.AnthropicError

    def body(self, messages: list[Message], tools: list[ToolSpec], tool_choice: ToolChoice) -> dict[str, Any]:
        system, wire = _to_wire(messages)
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_output_tokens,
            "messages": wire,
        }
        if system:
            kwargs["system"] = system
        if self.temperature is not None and self.features.temperature:
            kwargs["temperature"] = self.temperature
        if self.stop_sequences and self.features.stop:
            kwargs["stop_sequences"] = list(self.stop_sequences)
        if tools and self.features.tools:
            kwargs["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
            ]
            if self.features.tool_choice:
                kwargs["tool_choice"] = {"type": "any" if tool_choice == "required" else tool_choice}
        if self.forces_call_by_schema(tools, tool_choice):
            kwargs["output_config"] = {"format": {"type": "json_schema", "schema": call_schema(tools)}}
        elif self.answer_or_call(tools, tool_choice):
            schema = answer_or_call_schema(tools, self.verdict_schema())
            kwargs["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
        elif self.features.structured_output and wants_answer_schema(tools, tool_choice):
            kwargs["output_config"] = {"format": {"type": "json_schema", "schema": self.verdict_schema()}}
        return kwargs

    def completion(self, data: object) -> Completion:
        """The answer from a Messages response body."""
        blocks = data.get("content") if isinstance(data, dict) else None
        if not isinstance(data, dict) or not isinstance(blocks, list):
            raise TransientError(f"{self.label} at {self.url}: the response has no content")
        texts: list[str] = []
        calls: list[ToolCall] = []
        for block in blocks:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text":
                texts.append(str(block.get("text") or ""))
            elif kind == "tool_use":
                raw = block.get("input")
                calls.append(
                    ToolCall(
                        id=str(block.get("id") or ""),
                        name=str(block.get("name") or ""),
                        arguments=raw if isinstance(raw, dict) else None,
                        raw_arguments=repr(raw),
                    )
                )
        counts = data.get("usage")
        usage = Usage()
        if isinstance(counts, dict):
            usage = Usage(
                inputTokens=token_count(counts.get("input_tokens")),
                outputTokens=token_count(counts.get("output_tokens")),
            )
        return Completion(text="\n".join(texts), tool_calls=tuple(calls), usage=usage)
