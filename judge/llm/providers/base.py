"""The provider interface: one async ``complete(messages, tools)`` call.

A provider translates these neutral messages to its wire format, makes ONE request
(no retries of its own: SDKs are created with ``max_retries=0``), and translates the
answer back. Failures are raised as :class:`TransientError` (worth retrying: 429, 5xx,
timeouts, connection errors; :class:`ConnectionFailure` when the server cannot be
reached at all) or :class:`~judge.errors.HookError` (permanent: missing key, key
rejected, unknown model, rejected request, TLS failure). Every error names the
provider, the model and the base URL. Retrying is :mod:`judge.llm.retry`'s job.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol

from judge.decision import Usage
from judge.errors import HookError
from judge.llm.providers.clients import api_settings
from judge.llm.providers.failures import ConnectionFailure as ConnectionFailure
from judge.llm.providers.failures import TransientError as TransientError
from judge.llm.providers.failures import transport_failure
from judge.llm.providers.features import (
    STOP_SEQUENCES,
    Feature,
    Features,
    blames_limits,
    max_output_tokens,
    rejected_feature,
    shared_features,
    temperature,
)
from judge.llm.providers.features_memo import attach, server_key
from judge.llm.providers.request_log import RequestLog
from judge.llm.providers.schemas import CITATION_SCHEMA as CITATION_SCHEMA
from judge.llm.providers.schemas import VERDICT_SCHEMA as VERDICT_SCHEMA
from judge.llm.providers.schemas import answer_or_call_schema as answer_or_call_schema
from judge.llm.providers.schemas import call_schema as call_schema
from judge.llm.providers.schemas import limited, local_server, reason_limit
from judge.redact import redact_url

Role = Literal["system", "user", "assistant", "tool"]
#: "auto": the model may call a tool or answer; "none": it must answer (the verdict schema
#: applies); "required": it must call a tool (emulated with a call schema where a server
#: does not enforce it, see :meth:`SDKProvider.forces_call_by_schema`).
ToolChoice = Literal["auto", "none", "required"]


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


def wants_answer_schema(tools: list[ToolSpec], tool_choice: ToolChoice) -> bool:
    """Whether a request may carry the verdict schema: only when no tool can be called.

    A server that enforces the schema as a grammar (llama.cpp, vLLM, Ollama) could
    otherwise never emit a tool call, written or structured.
    """
    return not tools or tool_choice == "none"


def token_count(value: Any) -> int:
    """A token count from a usage object: a positive int, else 0."""
    return value if isinstance(value, int) and value > 0 else 0


_SURROGATE = re.compile("[\ud800-\udfff]")


def without_surrogates(value: Any) -> Any:
    """``value`` (a request body) with every lone surrogate replaced by U+FFFD, which
    UTF-8, and so the SDKs, can carry."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {without_surrogates(k): without_surrogates(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [without_surrogates(v) for v in value]
    return value


def error_message(exc: Any) -> str:
    """The server's error message from an SDK status error (short)."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])[:300]
    return str(getattr(exc, "message", exc))[:300]


class SDKProvider:
    """What the SDK-backed providers share: settings, client, the request and its errors.

    A subclass names its provider, environment variables, endpoint and structured-output
    field, loads its SDK, builds the request body and reads the answer. ``client``
    shares an existing SDK client (then :meth:`aclose` leaves it open); without it the
    provider builds its own. The request goes through the SDK (auth, errors, timeouts);
    the JSON answer is read as is, without building SDK models.
    """

    provider: ClassVar[str]
    key_var: ClassVar[str]
    url_var: ClassVar[str]
    path: ClassVar[str]
    structured_field: ClassVar[str]
    #: the request field of :data:`STOP_SEQUENCES`
    stop_field: ClassVar[str]
    #: the verdict schema in this provider's form (before :meth:`verdict_schema` bounds it)
    verdict_form: ClassVar[dict[str, Any]] = VERDICT_SCHEMA

    def __init__(self, model: str, env: Mapping[str, str] | None = None, *, client: Any = None) -> None:
        env = os.environ if env is None else env
        self.model = model
        self.label = f"{self.provider}:{model}"
        key, self.base_url = api_settings(env, self.key_var, self.url_var, self.label)
        self.sdk, self.sdk_error = self.load_sdk()
        self._owns_client = client is None
        self._client = self.new_client(key, self.base_url) if client is None else client
        structured = env.get("JUDGE_STRUCTURED_OUTPUT", "1") not in ("0", "false")
        shared = client is not None
        self.features = (
            shared_features(client, model, structured) if shared else Features(structured_output=structured)
        )
        attach(self.features, server_key(self.provider, self.base_url, model, structured))  # across processes
        self.max_output_tokens = max_output_tokens(env)
        self.temperature = temperature(env)
        self.max_reason = reason_limit(env, self.base_url)
        self.stop_sequences = STOP_SEQUENCES if local_server(self.base_url) else ()
        self.request_log = RequestLog.from_env(env)
        #: Called before every HTTP request, re-sends included (``judge tune``'s call budget).
        self.before_request: Callable[[], None] | None = None

    @staticmethod
    def load_sdk() -> tuple[Any, type[Exception]]:
        """The SDK module and its base exception class."""
        raise NotImplementedError

    @staticmethod
    def new_client(api_key: str, base_url: str | None) -> Any:
        """A new SDK client for this provider."""
        raise NotImplementedError

    def forces_call_by_schema(self, tools: list[ToolSpec], tool_choice: ToolChoice) -> bool:
        """Whether this request asks for a tool call as structured output (:func:`call_schema`):
        ``tool_choice: "required"`` where the server does not enforce it (or no longer gets
        tools or a tool choice), and structured output is still on."""
        return tool_choice == "required" and bool(tools) and self._choice_by_schema

    def answer_or_call(self, tools: list[ToolSpec], tool_choice: ToolChoice) -> bool:
        """Whether this request asks for a verdict OR a tool call as structured output
        (:func:`answer_or_call_schema`): a free turn (``"auto"``) on a server known to ignore
        ``tool_choice``, so the reply is one of the two and never rambles on."""
        return tool_choice == "auto" and bool(tools) and self._choice_by_schema

    @property
    def _choice_by_schema(self) -> bool:
        """Whether a tool choice is made by schema: structured output is on and the server
        does not enforce ``tool_choice`` itself (or no longer gets tools or a choice)."""
        native = self.features.tools and self.features.tool_choice and self.features.required_tool_choice
        return self.features.structured_output and not native

    def verdict_schema(self) -> dict[str, Any]:
        """The verdict schema, its free text bounded where the server takes that (:func:`reason_limit`)."""
        return limited(self.verdict_form, self.max_reason if self.features.schema_limits else None)

    @property
    def structured_output(self) -> bool:
        """Whether the verdict schema is still sent (see :func:`wants_answer_schema`)."""
        return self.features.structured_output

    def body(self, messages: list[Message], tools: list[ToolSpec], tool_choice: ToolChoice) -> dict[str, Any]:
        """The request body: only the :attr:`features` still on, and :attr:`structured_field`
        only when no tool can be called (:func:`wants_answer_schema`)."""
        raise NotImplementedError

    def completion(self, data: object) -> Completion:
        """The answer from a response body."""
        raise NotImplementedError

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
        started = time.monotonic()
        body = self.body(messages, tools, tool_choice)
        options: dict[str, Any] = {}
        if timeout is not None:
            options["timeout"] = max(0.01, timeout)
        try:
            data = await self._post(body, options)
        except self.sdk.APIStatusError as exc:
            fields: dict[Feature, str] = {
                "structured_output": self.structured_field,
                "tool_choice": "tool_choice",
                "tools": "tools",
                "temperature": "temperature",
                "stop": self.stop_field,
            }
            message = error_message(exc)
            feature = rejected_feature(exc.status_code, message, body, fields)
            bounded = self.max_reason is not None and self.features.schema_limits
            if feature == "structured_output" and bounded and blames_limits(message):
                feature = "schema_limits"  # first try the schema without the reason's length limit
            if feature is not None:
                # Structured output, tool_choice, tools or a temperature rejected (older models, local
                # servers, gateways): ask again without it, and never send it again.
                self.features.drop(feature)
                return await self.complete(messages, tools, tool_choice=tool_choice, timeout=timeout)
            raise self._translate(exc) from None
        except ValueError:  # a 200 whose body is not JSON (a proxy's page, a broken server)
            raise TransientError(f"{self.label} at {self.url}: the response is not JSON") from None
        except (self.sdk.APITimeoutError, self.sdk.APIConnectionError) as exc:
            # (the openai SDK reports a refused connection as a timeout: read the cause)
            raise transport_failure(exc, self.label, self.url) from None
        except self.sdk_error as exc:
            raise HookError(f"{self.label} at {self.url}: {exc}") from None
        completion = self.completion(data)
        asked = tool_choice == "required" and "tool_choice" in body and self.features.required_tool_choice
        # (a call written as text is a call: the loop runs it)
        written = '"name"' in completion.text and any(f'"{t.name}"' in completion.text for t in tools)
        if asked and self.features.structured_output and not completion.tool_calls and not written:
            # The server ignored tool_choice "required" (llama.cpp, some gateways): from now
            # on the call is asked for as structured output, starting with this turn.
            self.features.drop("required_tool_choice")
            left = None if timeout is None else timeout - (time.monotonic() - started)
            return await self.complete(messages, tools, tool_choice=tool_choice, timeout=left)
        return completion

    async def _post(self, body: dict[str, Any], options: dict[str, Any]) -> object:
        """One request through the SDK, written to the request log when there is one."""
        if self.before_request is not None:
            self.before_request()
        started, log = time.monotonic(), self.request_log
        try:
            try:
                data = await self._client.post(self.path, cast_to=object, body=body, options=options)
            except UnicodeEncodeError:  # a lone surrogate (surrogateescape text): sent as U+FFFD
                body = without_surrogates(body)
                data = await self._client.post(self.path, cast_to=object, body=body, options=options)
        except BaseException as exc:
            if log is not None:
                log.write(self.label, self.url, body, time.monotonic() - started, error=exc)
            raise
        if log is not None:
            log.write(self.label, self.url, body, time.monotonic() - started, response=data)
        return data

    def _translate(self, exc: Any) -> Exception:
        status: int = exc.status_code
        detail = error_message(exc)
        if transient_status(status):
            hint = parse_retry_after(exc.response.headers)
            return TransientError(f"{self.label} at {self.url}: HTTP {status}: {detail}", hint)
        if status == 404:
            return HookError(f"unknown model {self.label} at {self.url} (HTTP 404): {detail}")
        if status in (401, 403):
            return HookError(
                f"{self.label}: key rejected by {self.url} (HTTP {status}); check {self.key_var}: {detail}"
            )
        return HookError(f"{self.label} at {self.url}: request rejected (HTTP {status}): {detail}")

    @property
    def url(self) -> str:
        """The base URL requests go to (the SDK's default when none is configured), without
        a password or key it may carry: it is shown in reasons, warnings and logs."""
        return redact_url(str(getattr(self._client, "base_url", None) or self.base_url or "").rstrip("/"))
