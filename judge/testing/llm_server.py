"""A local model server speaking both wire formats, for tests, benchmarks and CI.

``POST /v1/chat/completions`` answers like OpenAI's Chat Completions and
``POST /v1/messages`` like Anthropic's Messages API, so the official SDKs can be pointed
at it (``OPENAI_BASE_URL=server.openai_base_url``,
``ANTHROPIC_BASE_URL=server.anthropic_base_url``)::

    from judge.testing import LLMServer, say, call, fail, hang

    with LLMServer() as server:
        server.push(call("GrepSearch", query="error", isRegexp=False), say('{"ok": true}'))
        ...                                   # run the judge against server.openai_base_url
        assert "GrepSearch" in server.requests[0].text

Replies come from, in order: the queue (:meth:`LLMServer.push`), the ``handler`` (a
callable, sync or async, receiving the :class:`LLMRequest` and returning a
:class:`Reply` or ``None`` to fall through), then ``default``. A reply may be text,
tool calls (several = parallel tool calls), an HTTP error (with ``retry-after``), a
delay, or a hang. Every request is recorded in :attr:`LLMServer.requests`.

It runs uvicorn (asyncio) in a background thread on 127.0.0.1 with a free port, so it
handles many concurrent requests (``latency=`` adds a delay to every answer). With
``api_key=`` it checks keys as the real services do: a request without that key
(``Authorization: Bearer`` or ``x-api-key``) gets a 401 in its wire format.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

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
    answering; ``hang`` waits (almost) for ever.
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
        value = self.body.get("messages")
        return value if isinstance(value, list) else []

    @property
    def system(self) -> str:
        """The system prompt (either format)."""
        if self.format == "anthropic":
            system = self.body.get("system", "")
            if isinstance(system, list):
                return "\n".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
            return str(system)
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
                if block.get("type") == "text":
                    texts.append(str(block.get("text", "")))
                elif block.get("type") == "tool_result":
                    texts.append(_text_of(block.get("content")))
        return "\n".join(texts)
    return "" if content is None else str(content)


Handler = Callable[[LLMRequest], Reply | Awaitable[Reply | None] | None]


class LLMServer:
    """The server. Use as a context manager or call :meth:`start` / :meth:`stop`."""

    def __init__(
        self,
        *,
        handler: Handler | None = None,
        default: Reply | None = None,
        latency: float = 0.0,
        record: bool = True,
        api_key: str | None = None,
    ) -> None:
        self.handler = handler
        self.api_key = api_key
        self.default = default or verdict(True)
        self.latency = latency
        self.record = record
        self.requests: list[LLMRequest] = []
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._socket: socket.socket | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._openai, methods=["POST"]),
                Route("/chat/completions", self._openai, methods=["POST"]),
                Route("/v1/messages", self._anthropic, methods=["POST"]),
                Route("/healthz", self._health, methods=["GET"]),
            ]
        )

    # -- scripting --------------------------------------------------------------

    def push(self, *replies: Reply) -> None:
        """Queue replies, answered in order before the handler/default apply."""
        with self._lock:
            self._queue.extend(replies)

    def reset(self) -> None:
        """Forget queued replies and recorded requests."""
        with self._lock:
            self._queue.clear()
            self.requests.clear()

    @property
    def pending(self) -> int:
        """Queued replies not yet used."""
        return len(self._queue)

    # -- addresses --------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """For ``OPENAI_BASE_URL`` (includes ``/v1``)."""
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """For ``ANTHROPIC_BASE_URL``."""
        return self.url

    def env(self, provider: WireFormat = "openai", model: str = "judge-test") -> dict[str, str]:
        """Environment variables pointing the judge's default tier at this server."""
        if provider == "openai":
            return {
                "OPENAI_BASE_URL": self.openai_base_url,
                "OPENAI_API_KEY": "test-key",
                "JUDGE_MODEL_REASONINGFAST": f"openai:{model}",
            }
        return {
            "ANTHROPIC_BASE_URL": self.anthropic_base_url,
            "ANTHROPIC_API_KEY": "test-key",
            "JUDGE_MODEL_REASONINGFAST": f"anthropic:{model}",
        }

    # -- lifecycle --------------------------------------------------------------

    def start(self) -> LLMServer:
        """Start in a background thread; returns once it accepts connections."""
        if self._thread is not None:
            return self
        # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets whose proto says TCP,
        # and accepted sockets inherit it. Without it, a response on a kept-alive connection
        # (headers and body are two writes) waits ~40 ms for the client's delayed ACK.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(4096)
        self._socket = sock
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.app,
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=1,
            backlog=4096,
        )
        self._server = uvicorn.Server(config)
        server = self._server
        self._thread = threading.Thread(
            target=lambda: server.run(sockets=[sock]), name="llm-server", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the test LLM server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Stop the server and wait for its thread."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._socket is not None:
            self._socket.close()
        self._server = self._thread = self._socket = None

    def __enter__(self) -> LLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- request handling ------------------------------------------------------

    async def _health(self, request: Request) -> Response:
        return JSONResponse({"ok": True})

    async def _reply_for(self, recorded: LLMRequest) -> Reply:
        with self._lock:
            if self.record:
                self.requests.append(recorded)
            queued = self._queue.popleft() if self._queue else None
        if queued is not None:
            return queued
        if self.handler is not None:
            result = self.handler(recorded)
            if inspect.isawaitable(result):
                result = await result
            if result is not None:
                return result
        return self.default

    async def _prepare(self, request: Request, fmt: WireFormat) -> tuple[LLMRequest | None, Reply | Response]:
        try:
            body = json.loads(await request.body())
        except (json.JSONDecodeError, UnicodeDecodeError):
            return None, _error(fmt, 400, "request body is not JSON")
        if not isinstance(body, dict):
            return None, _error(fmt, 400, "request body must be a JSON object")
        if self.api_key is not None and not _key_matches(request, self.api_key):
            return None, _error(fmt, 401, "invalid api key")
        recorded = LLMRequest(fmt, request.url.path, body, dict(request.headers))
        reply = await self._reply_for(recorded)
        wait = reply.delay + self.latency
        if wait > 0:
            await asyncio.sleep(wait)
        if reply.hang:
            return recorded, _error(fmt, 504, "hang ended")
        if reply.status != 200:
            headers = {}
            if reply.retry_after is not None:
                headers["retry-after"] = f"{reply.retry_after:g}"
            return recorded, _error(fmt, reply.status, reply.error or "error", headers)
        if reply.raw is not None:
            return recorded, Response(reply.raw, media_type="application/json")
        return recorded, reply

    async def _openai(self, request: Request) -> Response:
        recorded, outcome = await self._prepare(request, "openai")
        if recorded is None or isinstance(outcome, Response):
            assert isinstance(outcome, Response)
            return outcome
        reply = outcome
        tool_calls = [
            {
                "id": spec.id or f"call_{next(self._ids)}",
                "type": "function",
                "function": {"name": spec.name, "arguments": json.dumps(spec.arguments)},
            }
            for spec in reply.tool_calls
        ]
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if tool_calls:
            message["tool_calls"] = tool_calls
        prompt_tokens, completion_tokens = _usage(recorded, reply)
        return JSONResponse(
            {
                "id": f"chatcmpl-{next(self._ids)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": recorded.model,
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "tool_calls" if tool_calls else "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                },
            }
        )

    async def _anthropic(self, request: Request) -> Response:
        recorded, outcome = await self._prepare(request, "anthropic")
        if recorded is None or isinstance(outcome, Response):
            assert isinstance(outcome, Response)
            return outcome
        reply = outcome
        content: list[dict[str, Any]] = []
        if reply.text is not None:
            content.append({"type": "text", "text": reply.text})
        content += [
            {
                "type": "tool_use",
                "id": spec.id or f"toolu_{next(self._ids)}",
                "name": spec.name,
                "input": spec.arguments,
            }
            for spec in reply.tool_calls
        ]
        input_tokens, output_tokens = _usage(recorded, reply)
        return JSONResponse(
            {
                "id": f"msg_{next(self._ids)}",
                "type": "message",
                "role": "assistant",
                "model": recorded.model,
                "content": content,
                "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
            }
        )


def _key_matches(request: Request, key: str) -> bool:
    given = request.headers.get("x-api-key")
    if given is None:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        given = token if scheme.lower() == "bearer" else None
    return given == key


def _usage(recorded: LLMRequest, reply: Reply) -> tuple[int, int]:
    prompt = reply.input_tokens
    if prompt is None:
        prompt = max(1, len(json.dumps(recorded.body)) // 4)
    completion = reply.output_tokens
    if completion is None:
        size = len(reply.text or "") + sum(len(json.dumps(s.arguments)) for s in reply.tool_calls)
        completion = max(1, size // 4)
    return prompt, completion


_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def _error(fmt: WireFormat, status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    if fmt == "anthropic":
        kind = _ANTHROPIC_ERROR_TYPES.get(status, "api_error")
        body: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
    else:
        body = {"error": {"message": message, "type": "error", "code": status}}
    return JSONResponse(body, status_code=status, headers=headers)
