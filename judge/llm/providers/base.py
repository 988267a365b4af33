"""The provider interface: one async ``complete(messages, tools)`` call.

A provider translates these neutral messages to its wire format, makes ONE request
(no retries of its own: SDKs are created with ``max_retries=0``), and translates the
answer back. Failures are raised as :class:`TransientError` (worth retrying: 429, 5xx,
timeouts, connection errors) or :class:`~judge.errors.HookError` (permanent: missing
key, unknown model, rejected request). Retrying is :mod:`judge.llm.retry`'s job.
"""

from __future__ import annotations

import functools
import os
import ssl
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from judge.decision import Usage

Role = Literal["system", "user", "assistant", "tool"]
ToolChoice = Literal["auto", "none"]

#: The verdict schema requested as structured output where the provider supports it.
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "ok": {"type": "boolean", "description": "true to allow, false to block"},
        "reason": {
            "type": ["string", "null"],
            "description": "when ok is false: what the agent must still do",
        },
    },
    "required": ["ok", "reason"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class ToolCall:
    """A tool call the model asked for. ``arguments`` is ``None`` when it was not JSON."""

    id: str
    name: str
    arguments: dict[str, Any] | None
    raw_arguments: str = ""


@dataclass(frozen=True)
class Message:
    """One conversation message in a provider-neutral form."""

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None


@dataclass(frozen=True)
class ToolSpec:
    """A tool offered to the model: name, description and JSON-schema parameters."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class Completion:
    """One model answer: text, tool calls, and tokens used."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)


class Provider(Protocol):
    """A model endpoint. ``label`` is ``provider:model`` (as reported per hook)."""

    label: str

    async def complete(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        *,
        tool_choice: ToolChoice = "auto",
        timeout: float | None = None,
    ) -> Completion: ...


class TransientError(Exception):
    """A failure worth retrying; ``retry_after`` is the server's hint in seconds."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def parse_retry_after(headers: Any) -> float | None:
    """Seconds from ``retry-after-ms`` / ``retry-after`` (seconds or an HTTP date)."""
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000)
        value = headers.get("retry-after")
    except (AttributeError, ValueError, TypeError):
        return None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(str(value))
    except (TypeError, ValueError):
        return None
    import datetime as dt

    return max(0.0, (when - dt.datetime.now(dt.UTC)).total_seconds())


def transient_status(status: int) -> bool:
    """HTTP statuses worth retrying: 408, 409, 429 and every 5xx."""
    return status in (408, 409, 429) or status >= 500


def error_message(exc: Any) -> str:
    """The server's error message from an SDK status error (short)."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])[:300]
    return str(getattr(exc, "message", exc))[:300]


@functools.cache
def shared_ssl_context() -> ssl.SSLContext:
    """One TLS context for every SDK client (building one per client costs ~50 ms).

    Honours ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``; otherwise uses certifi's bundle when
    installed (as the SDKs' HTTP client does), else the system store.
    """
    cafile = os.environ.get("SSL_CERT_FILE") or None
    capath = os.environ.get("SSL_CERT_DIR") or None
    if cafile is None and capath is None:
        try:
            import certifi

            cafile = certifi.where()
        except ImportError:
            pass
    return ssl.create_default_context(cafile=cafile, capath=capath)
