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


def _text(content: Any) -> str:
    """Message content: a string, or a list of text parts (some compatible servers)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [part for part in content if isinstance(part, dict) and part.get("type") == "text"]
        return "".join(str(part.get("text") or "") for part in parts)
    return ""


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value > 0 else 0


def _parse_arguments(raw: str) -> dict[str, Any] | None:
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def new_client(api_key: str, base_url: str | None) -> Any:
    """An ``AsyncOpenAI`` client (no SDK retries: :mod:`judge.llm.retry` owns them)."""
    import openai

    return openai.AsyncOpenAI(
        api_key=api_key,
        base_url=base_url,
        max_retries=0,
        http_client=openai.DefaultAsyncHttpxClient(verify=shared_ssl_context()),
    )


def client_settings(model: str, env: Mapping[str, str]) -> tuple[str, str | None]:
    """``(api key, base URL or None)`` from the environment; HookError without a key."""
    key = env.get("OPENAI_API_KEY")
    if not key:
        raise HookError(f"OPENAI_API_KEY is not set (needed for openai:{model})")
    return key, env.get("OPENAI_BASE_URL") or None


class OpenAIProvider:
    """Chat Completions through the official ``openai`` SDK (async, ``max_retries=0``).

    ``client`` shares an existing SDK client (then :meth:`aclose` leaves it open);
    without it the provider builds its own. The request goes through the SDK (auth,
    errors, timeouts); the JSON answer is read as is, without building SDK models.
    """

    def __init__(self, model: str, env: Mapping[str, str] | None = None, *, client: Any = None) -> None:
        env = os.environ if env is None else env
        key, self.base_url = client_settings(model, env)
        import openai

        self._openai = openai
        self.model = model
        self.label = f"openai:{model}"
        self._owns_client = client is None
        self._client = new_client(key, self.base_url) if client is None else client
        self.structured_output = env.get("JUDGE_STRUCTURED_OUTPUT", "1") not in ("0", "false")

    async def aclose(self) -> None:
        """Close the SDK client's connections (unless the client is shared)."""
        if self._owns_client:
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
        options: dict[str, Any] = {}
        if timeout is not None:
            options["timeout"] = max(0.01, timeout)
        try:
            data = await self._client.post("/chat/completions", cast_to=object, body=kwargs, options=options)
        except self._openai.APIStatusError as exc:
            if exc.status_code == 400 and self.structured_output and "response_format" in kwargs:
                # Some OpenAI-compatible servers reject structured output: ask without it.
                self.structured_output = False
                return await self.complete(messages, tools, tool_choice=tool_choice, timeout=timeout)
            raise self._translate(exc) from None
        except ValueError:  # a 200 whose body is not JSON (a proxy's page, a broken server)
            raise TransientError(f"{self.label}: the response is not JSON") from None
        except self._openai.APITimeoutError:
            raise TransientError(f"{self.label}: request timed out") from None
        except self._openai.APIConnectionError as exc:
            raise TransientError(f"{self.label}: connection error: {exc}") from None
        except self._openai.OpenAIError as exc:
            raise HookError(f"{self.label}: {exc}") from None
        return self._completion(data)

    def _completion(self, data: object) -> Completion:
        """The answer from a Chat Completions response body."""
        choices = data.get("choices") if isinstance(data, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise TransientError(f"{self.label}: the response has no choices")
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
                inputTokens=_count(counts.get("prompt_tokens")),
                outputTokens=_count(counts.get("completion_tokens")),
            )
        return Completion(text=_text(message.get("content")), tool_calls=tuple(calls), usage=usage)

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
