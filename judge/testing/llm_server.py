"""A local model server speaking both wire formats, for tests, benchmarks and CI.

``POST /v1/chat/completions`` answers like OpenAI's Chat Completions,
``POST /v1/responses`` like OpenAI's Responses API (:mod:`judge.testing.responses_wire`)
and ``POST /v1/messages`` like Anthropic's Messages API — the last two streamed as
server-sent events when the request says ``"stream": true``
(:mod:`judge.testing.anthropic_wire`) — so the official SDKs and the agent CLIs (Claude
Code, Codex CLI, Copilot CLI) can be pointed at it (``OPENAI_BASE_URL=server.openai_base_url``,
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
delay, or a hang. Every request is recorded in :attr:`LLMServer.requests`. Side requests
(``POST /v1/messages/count_tokens``, and any other path or method, such as a client's
``HEAD /`` probe) are answered at once and recorded in :attr:`LLMServer.side_requests`.
The OpenAI Files and Batch APIs and Anthropic's Message Batches are served too
(:mod:`judge.testing.batch_wire`; their calls are side requests, each batch line a request).

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
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

import judge.testing.anthropic_wire as anthropic_wire
import judge.testing.responses_wire as responses_wire
from judge.testing.batch_wire import BatchStore
from judge.testing.llm_replies import (
    LLMRequest,
    Reply,
    ToolCallSpec,
    WireFormat,
    call,
    calls,
    cut_at_stop,
    fail,
    hang,
    say,
    verdict,
)

__all__ = [
    "Handler",
    "LLMRequest",
    "LLMServer",
    "Reply",
    "ToolCallSpec",
    "WireFormat",
    "call",
    "calls",
    "fail",
    "hang",
    "say",
    "verdict",
]


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
        self.side_requests: list[LLMRequest] = []
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._socket: socket.socket | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0
        #: The batch APIs' files and batches; ``batches.controls`` scripts how they end.
        self.batches = BatchStore(
            self._reply_for, self.answer_body, self._note_side_request, self._refuse_key, lambda: self.url
        )
        self.app = Starlette(
            routes=[
                *self.batches.routes(),
                Route("/v1/chat/completions", self._openai, methods=["POST"]),
                Route("/chat/completions", self._openai, methods=["POST"]),
                Route("/v1/responses", self._responses, methods=["POST"]),
                Route("/responses", self._responses, methods=["POST"]),
                Route("/v1/messages", self._anthropic, methods=["POST"]),
                Route("/v1/messages/count_tokens", self._count_tokens, methods=["POST"]),
                Route("/healthz", self._health, methods=["GET"]),
                Route("/{path:path}", self._other, methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]),
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
            self.side_requests.clear()

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
        return recorded, cut_at_stop(reply, body)

    async def _openai(self, request: Request) -> Response:
        recorded, outcome = await self._prepare(request, "openai")
        if recorded is None or isinstance(outcome, Response):
            assert isinstance(outcome, Response)
            return outcome
        return JSONResponse(self.answer_body(recorded, outcome))

    def answer_body(self, recorded: LLMRequest, reply: Reply) -> dict[str, Any]:
        """The whole (non-streamed) answer to ``recorded`` in its wire format."""
        if recorded.format == "anthropic":
            blocks = anthropic_wire.content_blocks(reply, lambda: str(next(self._ids)))
            return anthropic_wire.message(
                recorded, blocks, reply, f"msg_{next(self._ids)}", _usage(recorded, reply)
            )
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
        return {
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

    async def _anthropic(self, request: Request) -> Response:
        recorded, outcome = await self._prepare(request, "anthropic")
        if recorded is None or isinstance(outcome, Response):
            assert isinstance(outcome, Response)
            return outcome
        reply = outcome
        blocks = anthropic_wire.content_blocks(reply, lambda: str(next(self._ids)))
        message_id = f"msg_{next(self._ids)}"
        usage = _usage(recorded, reply)
        if recorded.body.get("stream") is True:
            events = anthropic_wire.stream_events(recorded, blocks, reply, message_id, usage)
            return StreamingResponse(
                anthropic_wire.encode_sse(events),
                media_type="text/event-stream",
                headers={"cache-control": "no-cache", "request-id": message_id},
            )
        return JSONResponse(anthropic_wire.message(recorded, blocks, reply, message_id, usage))

    async def _responses(self, request: Request) -> Response:
        recorded, outcome = await self._prepare(request, "openai")
        if recorded is None or isinstance(outcome, Response):
            assert isinstance(outcome, Response)
            return outcome
        items = responses_wire.output_items(outcome, lambda: str(next(self._ids)))
        response_id = f"resp_{next(self._ids)}"
        usage = _usage(recorded, outcome)
        if recorded.body.get("stream") is True:
            events = responses_wire.stream_events(recorded, items, response_id, usage)
            return StreamingResponse(
                anthropic_wire.encode_sse(events),
                media_type="text/event-stream",
                headers={"cache-control": "no-cache", "x-request-id": response_id},
            )
        return JSONResponse(responses_wire.response(recorded, items, response_id, usage))

    def _refuse_key(self, request: Request, fmt: WireFormat) -> Response | None:
        if self.api_key is not None and not _key_matches(request, self.api_key):
            return _error(fmt, 401, "invalid api key")
        return None

    async def _count_tokens(self, request: Request) -> Response:
        try:
            body = json.loads(await request.body())
        except (json.JSONDecodeError, UnicodeDecodeError):
            return _error("anthropic", 400, "request body is not JSON")
        if not isinstance(body, dict):
            return _error("anthropic", 400, "request body must be a JSON object")
        self._note_side_request(request, body)
        return JSONResponse(anthropic_wire.count_tokens(body))

    async def _other(self, request: Request) -> Response:
        """Any other path or method (probes such as ``HEAD /``): recorded, answered ``{}``."""
        self._note_side_request(request, None)
        return JSONResponse({})

    def _note_side_request(self, request: Request, body: dict[str, Any] | None) -> None:
        if self.record:
            path = f"{request.method} {request.url.path}"
            with self._lock:
                self.side_requests.append(LLMRequest("anthropic", path, body or {}, dict(request.headers)))


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


def _error(fmt: WireFormat, status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    if fmt == "anthropic":
        body = anthropic_wire.error_body(status, message)
    else:
        body = {"error": {"message": message, "type": "error", "code": status}}
    return JSONResponse(body, status_code=status, headers=headers)
