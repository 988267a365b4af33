"""Anthropic Messages with tool use (``ANTHROPIC_BASE_URL`` for gateways and test servers)."""

from __future__ import annotations

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

#: Anthropic's structured output wants optional fields left out of ``required``.
_ANTHROPIC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "ok": VERDICT_SCHEMA["properties"]["ok"],
        "reason": {"type": "string", "description": "when ok is false: what is missing"},
    },
    "required": ["ok"],
    "additionalProperties": False,
}


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value > 0 else 0


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

    return anthropic.AsyncAnthropic(
        api_key=api_key,
        base_url=base_url,
        max_retries=0,
        http_client=anthropic.DefaultAsyncHttpxClient(verify=shared_ssl_context()),
    )


def client_settings(model: str, env: Mapping[str, str]) -> tuple[str, str | None]:
    """``(api key, base URL or None)`` from the environment; HookError without a key."""
    key = env.get("ANTHROPIC_API_KEY")
    if not key:
        raise HookError(f"ANTHROPIC_API_KEY is not set (needed for anthropic:{model})")
    return key, env.get("ANTHROPIC_BASE_URL") or None


class AnthropicProvider:
    """Messages API through the official ``anthropic`` SDK (async, ``max_retries=0``).

    ``client`` shares an existing SDK client (then :meth:`aclose` leaves it open);
    without it the provider builds its own. The request goes through the SDK (auth,
    errors, timeouts); the JSON answer is read as is, without building SDK models.
    """

    def __init__(self, model: str, env: Mapping[str, str] | None = None, *, client: Any = None) -> None:
        env = os.environ if env is None else env
        key, self.base_url = client_settings(model, env)
        import anthropic

        self._anthropic = anthropic
        self.model = model
        self.label = f"anthropic:{model}"
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
        system, wire = _to_wire(messages)
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": MAX_OUTPUT_TOKENS,
            "messages": wire,
        }
        if system:
            kwargs["system"] = system
        if tools:
            kwargs["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
            ]
            kwargs["tool_choice"] = {"type": tool_choice}
        if self.structured_output:
            kwargs["output_config"] = {"format": {"type": "json_schema", "schema": _ANTHROPIC_SCHEMA}}
        options: dict[str, Any] = {}
        if timeout is not None:
            options["timeout"] = max(0.01, timeout)
        try:
            data = await self._client.post("/v1/messages", cast_to=object, body=kwargs, options=options)
        except self._anthropic.APIStatusError as exc:
            if exc.status_code == 400 and self.structured_output and "output_config" in kwargs:
                # Older models and some gateways reject structured output: ask without it.
                self.structured_output = False
                return await self.complete(messages, tools, tool_choice=tool_choice, timeout=timeout)
            raise self._translate(exc) from None
        except ValueError:  # a 200 whose body is not JSON (a proxy's page, a broken server)
            raise TransientError(f"{self.label}: the response is not JSON") from None
        except self._anthropic.APITimeoutError:
            raise TransientError(f"{self.label}: request timed out") from None
        except self._anthropic.APIConnectionError as exc:
            raise TransientError(f"{self.label}: connection error: {exc}") from None
        except self._anthropic.AnthropicError as exc:
            raise HookError(f"{self.label}: {exc}") from None
        return self._completion(data)

    def _completion(self, data: object) -> Completion:
        """The answer from a Messages response body."""
        blocks = data.get("content") if isinstance(data, dict) else None
        if not isinstance(data, dict) or not isinstance(blocks, list):
            raise TransientError(f"{self.label}: the response has no content")
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
                inputTokens=_count(counts.get("input_tokens")),
                outputTokens=_count(counts.get("output_tokens")),
            )
        return Completion(text="\n".join(texts), tool_calls=tuple(calls), usage=usage)

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
                f"{self.label}: authentication failed (HTTP {status}); check ANTHROPIC_API_KEY: {detail}"
            )
        return HookError(f"{self.label}: request rejected (HTTP {status}): {detail}")
