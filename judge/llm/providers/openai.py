"""OpenAI Chat Completions with tools (any OpenAI-compatible server via ``OPENAI_BASE_URL``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from judge.decision import Usage
from judge.llm.providers.base import (
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


def _to_wire(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["content"] = message.content or None
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": json.dumps(call.arguments)
                    if call.arguments is not None
                    else call.raw_arguments,
                },
            }
            for call in message.tool_calls
        ]
    return out


def _text(content: Any) -> str:
    """Message content: a string, or a list of text parts (some compatible servers)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [part for part in content if isinstance(part, dict) and part.get("type") == "text"]
        return "".join(str(part.get("text") or "") for part in parts)
    return ""


def _parse_arguments(raw: str) -> dict[str, Any] | None:
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def new_client(api_key: str, base_url: str | None) -> Any:
    """An ``AsyncOpenAI`` client (no SDK retries: :mod:`judge.llm.retry` owns them)."""
    import openai

    return sdk_client(openai, openai.AsyncOpenAI, api_key, base_url)


def client_settings(model: str, env: Mapping[str, str]) -> tuple[str, str | None]:
    """``(api key, base URL or None)`` from the environment; HookError without a key."""
    return api_settings(env, OpenAIProvider.key_var, OpenAIProvider.url_var, f"openai:{model}")


class OpenAIProvider(SDKProvider):
    """Chat Completions through the official ``openai`` SDK (async, ``max_retries=0``).

    See :class:`~judge.llm.providers.base.SDKProvider` for ``client`` and the errors.
    """

    provider = "openai"
    key_var = "OPENAI_API_KEY"
    url_var = "OPENAI_BASE_URL"
    path = "/chat/completions"
    structured_field = "response_format"
    stop_field = "stop"
    new_client = staticmethod(new_client)

    @staticmethod
    def load_sdk() -> tuple[Any, type[Exception]]:
        import openai

        return openai, openai.OpenAIError

    def body(self, messages: list[Message], tools: list[ToolSpec], tool_choice: ToolChoice) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [_to_wire(m) for m in messages],
            "max_completion_tokens": self.max_output_tokens,
        }
        if self.temperature is not None and self.features.temperature:
            kwargs["temperature"] = self.temperature
        if self.stop_sequences and self.features.stop:
            kwargs["stop"] = list(self.stop_sequences)
        if tools and self.features.tools:
            kwargs["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                }
                for t in tools
            ]
            if self.features.tool_choice:
                kwargs["tool_choice"] = tool_choice
                kwargs["parallel_tool_calls"] = True
        if self.forces_call_by_schema(tools, tool_choice):
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "tool_call", "schema": call_schema(tools), "strict": False},
            }
        elif self.answer_or_call(tools, tool_choice):
            schema = answer_or_call_schema(tools, self.verdict_schema())
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "verdict_or_tool_call", "schema": schema, "strict": False},
            }
        elif self.features.structured_output and wants_answer_schema(tools, tool_choice):
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "verdict", "schema": self.verdict_schema(), "strict": True},
            }
        return kwargs

    def completion(self, data: object) -> Completion:
        """The answer from a Chat Completions response body."""
        choices = data.get("choices") if isinstance(data, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise TransientError(f"{self.label} at {self.url}: the response has no choices")
        message = choices[0].get("message")
        message = message if isinstance(message, dict) else {}
        calls: list[ToolCall] = []
        for call in message.get("tool_calls") or []:
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict):
                continue
            raw = function.get("arguments")
            raw = raw if isinstance(raw, str) else ""
            calls.append(
                ToolCall(
                    id=str(call.get("id") or ""),
                    name=str(function.get("name") or ""),
                    arguments=_parse_arguments(raw),
                    raw_arguments=raw,
                )
            )
        usage = Usage()
        counts = data.get("usage") if isinstance(data, dict) else None
        if isinstance(counts, dict):
            usage = Usage(
                inputTokens=token_count(counts.get("prompt_tokens")),
                outputTokens=token_count(counts.get("completion_tokens")),
            )
        return Completion(text=_text(message.get("content")), tool_calls=tuple(calls), usage=usage)
