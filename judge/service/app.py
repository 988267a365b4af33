"""The HTTP gate service as an ASGI app; :mod:`judge.service.run` runs it.

Endpoints (handlers in :mod:`judge.service.endpoints`):

* ``GET /healthz`` — liveness, never authenticated;
* ``GET /readyz`` — readiness: 200 when the state store answers, else 503; never authenticated;
* ``GET /openapi.json`` — the OpenAPI document (:mod:`judge.service.openapi`), never authenticated;
* ``GET /ui`` — the live view's page (:mod:`judge.service.ui`; it holds no data), never authenticated;
* ``PUT|GET|DELETE /api/v2/extendedAgent/agents/{name}`` — custom agents, stored in
  the state store (:mod:`judge.service.store`); ``GET /api/v2/extendedAgent/agents`` lists them;
* ``POST /api/v2/hooks/{event}`` — the context JSON (plus optional inline ``transcript``
  and ``session_id``) in, the decision object out.

Every error is a JSON ``{"error": ...}`` with a 4xx status; bodies are size-limited while
they are read and checked before any hook runs (:mod:`judge.service.bodies`).
``execution_summary`` paths must resolve inside ``transcripts_dir``
(:mod:`judge.service.files`). Blocking work (SQLite, files) runs in threads, so a hook
waiting on its provider never blocks other requests. Stop rounds of one session run one
at a time, across replicas too (``StateStore.session_round``). One JSON line per request goes to the
``judge.server.access`` logger.
"""

from __future__ import annotations

import asyncio
import functools
import hmac
import json
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from judge.config import Config, load_config
from judge.errors import ApiError
from judge.hooks import forkserver
from judge.hooks.judging import PromptJudge
from judge.logs.jsonl import now_iso
from judge.service.bodies import DEFAULT_MAX_BODY, MAX_DEPTH, MAX_YAML_BODY, error_response, json_response
from judge.service.claude_code import ClaudeCodeHooks
from judge.service.endpoints import STATE_DB, ServerSettings, Service
from judge.service.files import confine_path, remove_private, sweep_private_folders, write_private
from judge.service.limits import BodyDeadline, ConnectionLimits, configure
from judge.service.logging_config import access_log, configure_logging, error_log, limit_log_rates
from judge.service.openapi import openapi_document
from judge.service.ui import ui_page
from judge.service.workers import watch_master

__all__ = [
    "DEFAULT_MAX_BODY",
    "MAX_DEPTH",
    "MAX_YAML_BODY",
    "STATE_DB",
    "TOKEN_ENV",
    "ApiError",
    "ServerSettings",
    "Service",
    "app_from_env",
    "configure_logging",
    "confine_path",
    "create_app",
    "json_response",
    "remove_private",
    "settings_to_env",
    "write_private",
]

#: Environment variable holding the bearer token; unset or empty means no auth.
TOKEN_ENV = "JUDGE_API_TOKEN"
#: Paths answered without a token.
PUBLIC_PATHS = ("/healthz", "/readyz", "/openapi.json", "/ui")


# ---------------------------------------------------------------------------
# Middleware: request log, auth, early size check


class ServiceMiddleware:
    """One JSON log line per request; bearer auth; 413 before reading an oversized body."""

    def __init__(self, app: ASGIApp, settings: ServerSettings) -> None:
        self.app = app
        self.settings = settings
        token = settings.api_token
        self.token = token.encode("utf-8") if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            refusal = self._refusal(scope)
            if refusal is not None:
                await refusal(scope, receive, send_status)
            else:
                await self.app(scope, receive, send_status)
        finally:
            client = scope.get("client")
            access_log.info(
                json.dumps(
                    {
                        "ts": now_iso(),
                        "method": scope.get("method"),
                        "path": scope.get("path"),
                        "status": status,
                        "durationMs": round((time.perf_counter() - start) * 1000.0, 3),
                        "session": scope.get("judge.session"),
                        "client": client[0] if client else None,
                    },
                    ensure_ascii=False,
                )
            )

    def _refusal(self, scope: Scope) -> Response | None:
        headers = {k.lower(): v for k, v in scope.get("headers", [])}
        if self.token is not None and scope.get("path") not in PUBLIC_PATHS:
            auth = headers.get(b"authorization", b"")
            scheme, _, given = auth.partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(given.strip(), self.token):
                return error_response(401, "missing or invalid bearer token")
        length = headers.get(b"content-length")
        if length is not None:
            try:
                size = int(length)
            except ValueError:
                return error_response(400, "invalid Content-Length header")
            if size > self.settings.max_body:
                return error_response(
                    413, f"request body is larger than the {self.settings.max_body}-byte limit"
                )
        return None


# ---------------------------------------------------------------------------
# Error handlers and the app


async def _on_api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    if exc.status >= 500:
        error_log.error("%s %s: %s %s", request.method, request.url.path, exc.message, exc.problems or "")
    response = error_response(exc.status, exc.message, exc.problems)
    if exc.status == 408:  # the rest of the request is never read: the connection cannot be reused
        response.headers["connection"] = "close"
    return response


async def _on_http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    response = error_response(exc.status_code, str(exc.detail), None)
    response.headers.update(exc.headers or {})
    return response


async def _on_disconnect(request: Request, exc: Exception) -> Response:
    # Nobody reads this answer; it only gives the request log line a status.
    return error_response(400, "the client disconnected before sending the whole request")


async def _on_bug(request: Request, exc: Exception) -> Response:
    error_log.error("unhandled error on %s %s: %r", request.method, request.url.path, exc)
    return error_response(500, "internal error")


@functools.cache
def _openapi_body() -> bytes:
    """The OpenAPI document as sent (built once: anyone may ask for it, as often as they like)."""
    return bytes(json_response(openapi_document()).body)


async def _openapi(request: Request) -> Response:
    return Response(_openapi_body(), media_type="application/json")


def create_app(settings: ServerSettings, judge: PromptJudge | None = None) -> Starlette:
    """The ASGI app. ``judge`` evaluates prompt hooks (default: the LLM judge)."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    sweep_private_folders()  # transcripts left behind by a service killed mid-request
    service = Service(settings, judge)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # Enough threads that SQLite/audit writes of many concurrent requests don't queue.
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(32, "judge-io"))
        limit_log_rates()  # uvicorn has set up its loggers by now
        forkserver.start()  # command hooks forked by a fork server, not started one by one
        try:
            yield
        finally:
            await asyncio.to_thread(service.close)
            forkserver.stop()

    handler = Callable[[Request], Awaitable[Response]]
    routes: list[tuple[str, handler, list[str]]] = [
        ("/healthz", service.healthz, ["GET"]),
        ("/readyz", service.readyz, ["GET"]),
        ("/openapi.json", _openapi, ["GET"]),
        ("/metrics", service.prometheus, ["GET"]),
        ("/ui", ui_page, ["GET"]),
        ("/api/v2/ui/summary", service.ui_summary, ["GET"]),
        ("/api/v2/extendedAgent/agents", service.list_agents, ["GET"]),
        ("/api/v2/extendedAgent/agents/{name}", service.agent, ["GET", "PUT", "DELETE"]),
        ("/api/v2/hooks/{event}", service.hook, ["POST"]),
        ("/api/v2/claude-code", ClaudeCodeHooks(service).post, ["POST"]),
    ]
    app = Starlette(
        routes=[Route(path, fn, methods=methods) for path, fn, methods in routes],
        middleware=[
            Middleware(ServiceMiddleware, settings=settings),
            Middleware(BodyDeadline, timeout=settings.body_timeout),
        ],
        exception_handlers={
            ApiError: _on_api_error,
            HTTPException: _on_http_error,
            ClientDisconnect: _on_disconnect,
            Exception: _on_bug,
        },
        lifespan=lifespan,
    )
    app.state.service = service
    return app


# ---------------------------------------------------------------------------
# Worker processes (``judge serve --workers N``) build the app from the environment

SETTINGS_ENV = "JUDGE_SERVE_SETTINGS"


def connection_limits(settings: ServerSettings) -> ConnectionLimits:
    """The per-worker connection limits of ``settings`` (:mod:`judge.service.limits`)."""
    return ConnectionLimits(settings.header_timeout, settings.max_connections or 1, settings.write_timeout)


def settings_to_env(config_path: str | None, settings: ServerSettings) -> str:
    return json.dumps(
        {
            "config": config_path,
            "data_dir": str(settings.data_dir),
            "transcripts_dir": str(settings.transcripts_dir) if settings.transcripts_dir else None,
            "max_body": settings.max_body,
            "header_timeout": settings.header_timeout,
            "body_timeout": settings.body_timeout,
            "write_timeout": settings.write_timeout,
            "max_transcript_bytes": settings.max_transcript_bytes,
            "max_connections": settings.max_connections,
            "state": settings.state,
            "logs": settings.logs,
        }
    )


def app_from_env() -> Starlette:
    """App factory for worker processes (settings in ``JUDGE_SERVE_SETTINGS``)."""
    configure_logging()
    watch_master()
    raw = json.loads(os.environ[SETTINGS_ENV])
    config = load_config(raw["config"]) if raw.get("config") else Config()
    settings = ServerSettings(
        config=config,
        data_dir=Path(raw["data_dir"]),
        transcripts_dir=Path(raw["transcripts_dir"]) if raw.get("transcripts_dir") else None,
        max_body=int(raw["max_body"]),
        api_token=os.environ.get(TOKEN_ENV) or None,
        header_timeout=float(raw["header_timeout"]),
        body_timeout=float(raw["body_timeout"]),
        write_timeout=float(raw["write_timeout"]),
        max_transcript_bytes=int(raw["max_transcript_bytes"]),
        max_connections=raw["max_connections"],
        state=raw.get("state"),
        logs=raw.get("logs", "files"),
    )
    configure(connection_limits(settings))
    return create_app(settings)
