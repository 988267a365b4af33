"""OpenAI Chat Completions with tools (any OpenAI-compatible server via ``OPENAI_BASE_URL``)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from judge.decision import Usage
from judge.errors import HookError
from judge.llm.providers.base import (
    VERDICT_SCHEMA,
    Completion,
    Message,
    ToolCall,
    ToolChoice,
    ToolSpec,
    TransientError,
    error_message,
    parse_retry_after,
    shared_ssl_context,
    transient_status,
)

MAX_OUTPUT_TOKENS = 4096


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


def _parse_arguments(raw: str) -> dict[str, Any] | None:
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


class OpenAIProvider:
    """Chat Completions through the official ``openai`` SDK (async, ``max_retries=0``)."""

    def __init__(self, model: str, env: Mapping[str, str] | None = None) -> None:
        env = os.environ if env is None else env
        key = env.get("OPENAI_API_KEY")
        if not key:
            raise HookError(f"OPENAI_API_KEY is not set (needed for openai:{model})")
        import openai

        self._openai = openai
        self.model = model
        self.label = f"openai:{model}"
        self.base_url = env.get("OPENAI_BASE_URL") or None
        self._client = openai.AsyncOpenAI(
            api_key=key,
            base_url=self.base_url,
            max_retries=0,
            http_client=openai.DefaultAsyncHttpxClient(verify=shared_ssl_context()),
        )
        self.structured_output = env.get("JUDGE_STRUCTURED_OUTPUT", "1") not in ("0", "false")

    async def aclose(self) -> None:
        """Close the SDK client's connections."""
        await self._client.close()

    async def complete(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        *,
        tool_choice: ToolChoice = "auto",
        timeout: float | None = None,
    ) -> Completion:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [_to_wire(m) for m in messages],
            "max_completion_tokens": MAX_OUTPUT_TOKENS,
        }
        if tools:
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
            kwargs["tool_choice"] = tool_choice
            kwargs["parallel_tool_calls"] = True
        if self.structured_output:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "verdict", "schema": VERDICT_SCHEMA, "strict": True},
            }
        if timeout is not None:
            kwargs["timeout"] = max(0.01, timeout)
        try:
            response = await self._client.chat.completions.create(**kwargs)
        except self._openai.APIStatusError as exc:
            if exc.status_code == 400 and self.structured_output and "response_format" in kwargs:
                # Some OpenAI-compatible servers reject structured output: ask without it.
                self.structured_output = False
                return await self.complete(messages, tools, tool_choice=tool_choice, timeout=timeout)
            raise self._translate(exc) from None
        except self._openai.APITimeoutError:
            raise TransientError(f"{self.label}: request timed out") from None
        except self._openai.APIConnectionError as exc:
            raise TransientError(f"{self.label}: connection error: {exc}") from None
        except self._openai.OpenAIError as exc:
            raise HookError(f"{self.label}: {exc}") from None
        if not response.choices:
            raise TransientError(f"{self.label}: the response has no choices")
        message = response.choices[0].message
        calls = tuple(
            ToolCall(
                id=call.id,
                name=call.function.name,
                arguments=_parse_arguments(call.function.arguments),
                raw_arguments=call.function.arguments or "",
            )
            for call in (message.tool_calls or [])
            if getattr(call, "function", None) is not None
        )
        usage = Usage()
        if response.usage is not None:
            usage = Usage(
                inputTokens=response.usage.prompt_tokens or 0,
                outputTokens=response.usage.completion_tokens or 0,
            )
        return Completion(text=message.content or "", tool_calls=calls, usage=usage)

    def _translate(self, exc: Any) -> Exception:
        status: int = exc.status_code
        detail = error_message(exc)
        where = f" at {self.base_url}" if self.base_url else ""
        if transient_status(status):
            return TransientError(
                f"{self.label}: HTTP {status}: {detail}", parse_retry_after(exc.response.headers)
            )
        if status == 404:
            return HookError(f"unknown model {self.label}{where} (HTTP 404): {detail}")
        if status in (401, 403):
            return HookError(
                f"{self.label}: authentication failed (HTTP {status}); check OPENAI_API_KEY: {detail}"
            )
        return HookError(f"{self.label}: request rejected (HTTP {status}): {detail}")
