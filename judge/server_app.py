"""The HTTP gate service (INTERFACES §5) as an ASGI app; :mod:`judge.server` runs it.

Endpoints:

* ``GET /healthz`` — liveness, never authenticated;
* ``PUT|GET|DELETE /api/v2/extendedAgent/agents/{name}`` — custom agents, stored in
  the SQLite state database of the data dir; ``GET /api/v2/extendedAgent/agents`` lists them;
* ``POST /api/v2/hooks/{event}`` — the context JSON (plus optional inline ``transcript``
  and ``session_id``) in, the decision object of INTERFACES §4 out.

Every error is a JSON ``{"error": ...}`` with a 4xx status; the body is size-limited while
it is read; deep nesting, non-finite numbers and lone surrogates are refused before any
hook runs. ``execution_summary`` paths must resolve inside ``transcripts_dir``. Blocking
work (SQLite, files) runs in threads, so a hook waiting on its provider never blocks
other requests. Stop rounds of one session run one at a time (:class:`SessionLocks`), so
concurrent Stops of a session count 1, 2, ... like consecutive ones. One JSON line per
request goes to the ``judge.server.access`` logger.
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import hashlib
import hmac
import json
import logging
import math
import os
import re
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from judge.audit import AuditLog, now_iso
from judge.config import (
    EVENTS,
    STOP_EVENTS,
    Config,
    CustomAgent,
    load_config,
    parse_yaml,
    validate_custom_agent,
)
from judge.context import parse_context
from judge.decision import PromptJudge
from judge.engine import Engine, default_judge
from judge.errors import ConfigError, ContextError
from judge.gate import Gate
from judge.state import Store
from judge.transcripts import discard_rendered

#: Default request body limit: 10 MiB (inline transcripts can be large).
DEFAULT_MAX_BODY = 10 * 1024 * 1024
#: Deepest JSON/YAML nesting accepted in a request body.
MAX_DEPTH = 64
#: YAML body limit: the pure-Python parser takes about 15 s of CPU per MiB of short items.
MAX_YAML_BODY = 256 * 1024
#: Longest integer accepted in a YAML body (Python's own limit for decimal strings).
MAX_INT_CHARS = 4300
#: Name of the state database inside the data dir.
STATE_DB = "state.sqlite3"
#: Environment variable holding the bearer token; unset or empty means no auth.
TOKEN_ENV = "JUDGE_API_TOKEN"

AGENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
MAX_SESSION_ID = 256
#: Validated custom agents kept per worker (re-validated whenever the stored body changes).
AGENT_CACHE_SIZE = 256
JSON_TYPES = ("application/json", "text/json")
YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml")
_PARSE_IN_THREAD = 256 * 1024

access_log = logging.getLogger("judge.server.access")
error_log = logging.getLogger("judge.server")


@dataclass(frozen=True)
class ServerSettings:
    """What the service needs; :func:`judge.server.serve_main` builds it from the flags."""

    config: Config
    data_dir: Path
    transcripts_dir: Path | None = None
    max_body: int = DEFAULT_MAX_BODY
    api_token: str | None = None


class ApiError(Exception):
    """An error answered as ``{"error": message, "problems": [...]}`` with ``status``."""

    def __init__(self, status: int, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.problems = problems


# ---------------------------------------------------------------------------
# JSON in and out


def _finite(value: Any) -> Any:
    """A copy of ``value`` with NaN/Infinity replaced by null (strict JSON out)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """Strict JSON (no NaN; unencodable characters replaced, never a crash)."""
    try:
        text = json.dumps(data, ensure_ascii=False, allow_nan=False)
    except ValueError:
        text = json.dumps(_finite(data), ensure_ascii=False, allow_nan=False)
    body = text.encode("utf-8", errors="replace")
    return Response(body, status_code=status, media_type="application/json", headers=headers)


def error_response(status: int, message: str, problems: list[str] | None = None) -> Response:
    data: dict[str, Any] = {"error": message}
    if problems:
        data["problems"] = problems
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return json_response(data, status, headers)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def check_tree(value: Any, max_depth: int = MAX_DEPTH) -> None:
    """Refuse what later stages cannot take: deep nesting, non-JSON types, NaN, lone surrogates.

    Iterative, so hostile nesting cannot exhaust the stack here.
    """
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= max_depth:
                raise ApiError(400, f"body is nested deeper than {max_depth} levels")
            if isinstance(item, dict):
                for key, sub in item.items():
                    if not isinstance(key, str):
                        raise ApiError(400, f"keys must be strings, got {type(key).__name__} {key!r:.40}")
                    _check_text(key)
                    stack.append((sub, depth + 1))
            else:
                stack.extend((sub, depth + 1) for sub in item)
        elif isinstance(item, str):
            _check_text(item)
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise ApiError(400, f"{item} is not a valid JSON number")
        elif item is not None and not isinstance(item, bool | int):
            raise ApiError(400, f"values of type {type(item).__name__} are not allowed (JSON types only)")


def _check_text(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ApiError(400, "strings must be valid Unicode (lone surrogate escape found)") from None


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json object hook: a key given twice is an error (json would keep the last silently)."""
    data = dict(pairs)
    if len(data) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ApiError(400, f"duplicate key {key!r} in a JSON object")
            seen.add(key)
    return data


def _body_text(body: bytes, expected: str) -> str:
    """A request body as text; ApiError(400) when it is empty or not UTF-8."""
    if not body.strip():
        raise ApiError(400, f"empty body: expected {expected}")
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ApiError(400, f"body is not valid UTF-8 (byte {exc.start})") from None


def parse_json_bytes(body: bytes) -> Any:
    """Parse and check a JSON body; ApiError(400) on anything malformed."""
    text = _body_text(body, "a JSON object")
    try:
        data = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise ApiError(400, f"malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise ApiError(400, f"body is nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:
        raise ApiError(400, f"malformed JSON: {exc}") from None
    check_tree(data)
    return data


class _NoAliasLoader(yaml.SafeLoader):
    """Safe YAML without anchors/aliases (no "billion laughs" expansion), nesting refused
    past :data:`MAX_DEPTH` while composing, and integers of at most :data:`MAX_INT_CHARS`
    characters (a long base-60 ``1:2:3...`` integer costs quadratic time to build)."""

    depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(None, None, "YAML aliases are not accepted", event.start_mark)
        if self.depth >= MAX_DEPTH:
            raise RecursionError
        self.depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        if len(str(node.value)) > MAX_INT_CHARS:
            raise yaml.constructor.ConstructorError(
                None, None, f"integer longer than {MAX_INT_CHARS} characters", node.start_mark
            )
        return super().construct_yaml_int(node)  # type: ignore[no-untyped-call,no-any-return]


_NoAliasLoader.add_constructor("tag:yaml.org,2002:int", _NoAliasLoader.construct_yaml_int)


def parse_yaml_bytes(body: bytes) -> Any:
    """Parse and check a YAML body; ApiError(400) on anything malformed."""
    text = _body_text(body, "a YAML document")
    try:
        data, duplicates = parse_yaml(text, _NoAliasLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ApiError(400, f"malformed YAML{where}: {problem}") from None
    except (ValueError, TypeError, OverflowError) as exc:  # a scalar its tag cannot build (2001-13-45)
        raise ApiError(400, f"malformed YAML: {exc}") from None
    except RecursionError:
        raise ApiError(400, f"body is nested deeper than {MAX_DEPTH} levels") from None
    if duplicates:
        raise ApiError(400, "; ".join(duplicates))
    check_tree(data)
    return data


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refused with 413 as soon as it grows past ``limit`` bytes."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise ApiError(413, f"request body is larger than the {limit}-byte limit")
        chunks.append(chunk)
    return b"".join(chunks)


def _media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


async def read_document(request: Request, limit: int, yaml_ok: bool = False) -> Any:
    """Read, parse and check the body by its Content-Type (JSON, or YAML when allowed)."""
    media = _media_type(request)
    is_yaml = media in YAML_TYPES
    if media and not (media in JSON_TYPES or media.endswith("+json") or (yaml_ok and is_yaml)):
        accepted = "application/json" + (" or application/yaml" if yaml_ok else "")
        raise ApiError(415, f"unsupported Content-Type {media!r}; send {accepted}")
    body = await read_body(request, min(limit, MAX_YAML_BODY) if is_yaml else limit)
    parse = parse_yaml_bytes if is_yaml else parse_json_bytes
    if len(body) > _PARSE_IN_THREAD:
        return await asyncio.to_thread(parse, body)
    return parse(body)


# ---------------------------------------------------------------------------
# Custom agents


def _check_name(name: str) -> str:
    if not AGENT_NAME.match(name):
        raise ApiError(
            400,
            f"invalid agent name {name[:80]!r}: use 1-128 letters, digits, '_', '.', '-' "
            "(starting with a letter or digit)",
        )
    return name


def agent_properties(agent: CustomAgent) -> dict[str, Any]:
    """The stored (normalised) properties of a validated custom agent."""
    props = agent.model_dump(mode="json", by_alias=True, exclude_none=True)
    hooks = props.get("hooks") or {}
    props["hooks"] = {event: entries for event, entries in hooks.items() if entries}
    return props


def agent_from_document(name: str, doc: Any) -> CustomAgent:
    """Validate a PUT body: the platform form or the YAML/JSON resource document."""
    if not isinstance(doc, dict):
        raise ApiError(400, f"body must be an object, got {type(doc).__name__}")
    if "properties" in doc:
        unknown = sorted(set(doc) - {"name", "properties"})
        if unknown:
            raise ApiError(400, "invalid custom agent", [f"{k}: unknown key" for k in unknown])
        given = doc.get("name")
        if given is not None and given != name:
            raise ApiError(400, f"name in the body ({given!r:.80}) does not match the URL ({name!r})")
        body, prefix = doc["properties"], "properties"
    elif "spec" in doc or "kind" in doc:
        unknown = sorted(set(doc) - {"api_version", "apiVersion", "kind", "metadata", "spec"})
        problems = [f"{k}: unknown key" for k in unknown]
        kind = doc.get("kind")
        if kind is not None and kind != "ExtendedAgent":
            problems.append(f"kind: expected 'ExtendedAgent', got {kind!r:.80}")
        metadata = doc.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            problems.append("metadata: must be a mapping")
        elif metadata and metadata.get("name") not in (None, name):
            problems.append(f"metadata.name: {metadata.get('name')!r:.80} does not match the URL ({name!r})")
        if problems:
            raise ApiError(400, "invalid custom agent", problems)
        body, prefix = doc.get("spec") or {}, "spec"
    else:
        raise ApiError(
            400,
            'expected {"name": ..., "properties": {"instructions": ..., "hooks": {...}}} '
            "or a resource document with spec",
        )
    try:
        return validate_custom_agent(body, prefix)
    except ConfigError as exc:
        raise ApiError(400, "invalid custom agent", exc.problems) from None


# ---------------------------------------------------------------------------
# execution_summary confinement and inline transcripts


def confine_path(raw: Any, root: Path | None) -> str:
    """The resolved ``execution_summary`` path, which must be a file inside ``root``."""
    if not isinstance(raw, str) or not raw:
        raise ApiError(400, "execution_summary: must be a non-empty path string")
    if root is None:
        raise ApiError(
            400,
            "execution_summary: paths are not accepted by this service (it runs without "
            '--transcripts-dir); send the transcript inline in "transcript"',
        )
    if "\x00" in raw:
        raise ApiError(400, "execution_summary: path contains a NUL byte")
    candidate = Path(raw)
    if not candidate.is_absolute():
        candidate = root / candidate
    try:
        resolved = candidate.resolve(strict=False)
    except (OSError, RuntimeError) as exc:
        raise ApiError(400, f"execution_summary: cannot resolve path: {exc}") from None
    if not resolved.is_relative_to(root):
        raise ApiError(400, "execution_summary: path is outside the transcripts dir")
    try:
        is_file = resolved.is_file()
    except OSError as exc:  # e.g. a name too long
        raise ApiError(400, f"execution_summary: cannot use path: {exc.strerror or exc}") from None
    if not is_file:
        raise ApiError(400, "execution_summary: no such transcript file in the transcripts dir")
    return str(resolved)


def remove_private(path: Path) -> None:
    """Delete an inline transcript and any rendered copy the judge made of it."""
    discard_rendered(path)
    path.unlink(missing_ok=True)


def write_private(text: str) -> Path:
    """Write an inline transcript to a new 0600 temporary file."""
    fd, name = tempfile.mkstemp(prefix="judge-transcript-", suffix=".txt")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
    return Path(name)


# ---------------------------------------------------------------------------
# State: one SQLite connection per thread; Stop rounds of a session one at a time


class SessionLocks:
    """Stop rounds of one session, one at a time, in this process and across workers.

    A round reads the session's rejection count, runs the hooks and stores the new count;
    two rounds of one session running side by side would both start from the same count.
    Held in order, N concurrent rejected Stops of a session count 1..N (the one reaching
    ``maxRejections`` is the single forced stop), exactly as N consecutive ones.

    In the process: an :class:`asyncio.Lock` per session. Across worker processes:
    ``flock`` on ``locks/<hash>.lock`` in the data dir, polled without blocking a thread.
    The holder unlinks the file before unlocking and a new holder checks that the file it
    locked is still the one at the path, so lock files never pile up.
    """

    POLL_FIRST = 0.002
    POLL_MAX = 0.05

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @asynccontextmanager
    async def hold(self, session_id: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(session_id) or (asyncio.Lock(), 0)
        self._locks[session_id] = (lock, users + 1)
        try:
            async with lock:
                path = self.folder / (hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:40] + ".lock")
                fd = await self._lock_file(path)
                try:
                    yield
                finally:
                    path.unlink(missing_ok=True)
                    os.close(fd)  # closing releases the flock
        finally:
            lock, users = self._locks[session_id]
            if users <= 1:
                del self._locks[session_id]
            else:
                self._locks[session_id] = (lock, users - 1)

    async def _lock_file(self, path: Path) -> int:
        delay = self.POLL_FIRST
        while True:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.POLL_MAX)
                continue
            try:
                same = os.fstat(fd).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                return fd
            os.close(fd)  # the previous holder removed it: lock the new file


# ---------------------------------------------------------------------------
# The service


class Service:
    """Request handlers bound to one configuration, store, audit log and judge."""

    def __init__(self, settings: ServerSettings, judge: PromptJudge | None = None) -> None:
        self.settings = settings
        self.store = Store(settings.data_dir / STATE_DB)
        self.audit = AuditLog(settings.data_dir)
        self.judge: PromptJudge = judge if judge is not None else default_judge()
        root = settings.transcripts_dir
        self.transcripts_root = root.resolve() if root is not None else None
        self.sessions = SessionLocks(settings.data_dir / "locks")
        self.engine = Engine(settings.config, judge=self.judge)
        self._agents: dict[str, tuple[dict[str, Any], Engine]] = {}

    # -- endpoints -------------------------------------------------------------------

    async def healthz(self, request: Request) -> Response:
        return json_response({"status": "ok"})

    async def put_agent(self, request: Request) -> Response:
        name = _check_name(request.path_params["name"])
        doc = await read_document(request, self.settings.max_body, yaml_ok=True)
        agent = agent_from_document(name, doc)
        stored = {"name": name, "properties": agent_properties(agent)}
        await asyncio.to_thread(self.store.put_agent, name, stored)
        return json_response(stored, 202)

    async def get_agent(self, request: Request) -> Response:
        name = _check_name(request.path_params["name"])
        stored = await asyncio.to_thread(self.store.get_agent, name)
        if stored is None:
            raise ApiError(404, f"no custom agent named {name!r}")
        return json_response(stored)

    async def delete_agent(self, request: Request) -> Response:
        name = _check_name(request.path_params["name"])
        if not await asyncio.to_thread(self.store.delete_agent, name):
            raise ApiError(404, f"no custom agent named {name!r}")
        return Response(status_code=204)

    async def agent(self, request: Request) -> Response:
        handlers = {"GET": self.get_agent, "PUT": self.put_agent, "DELETE": self.delete_agent}
        return await handlers[request.method](request)

    async def list_agents(self, request: Request) -> Response:
        def load() -> list[dict[str, Any]]:
            found = (self.store.get_agent(n) for n in self.store.list_agents())
            return [a for a in found if a is not None]

        return json_response({"agents": await asyncio.to_thread(load)})

    async def hook(self, request: Request) -> Response:
        event = request.path_params["event"]
        if event not in EVENTS:
            raise ApiError(404, f"unknown event {event[:80]!r} (expected one of {', '.join(EVENTS)})")
        body = await read_document(request, self.settings.max_body)
        if not isinstance(body, dict):
            raise ApiError(400, f"body must be a JSON object (the hook context), got {type(body).__name__}")
        context = dict(body)
        transcript = context.pop("transcript", None)
        if transcript is not None and not isinstance(transcript, str):
            raise ApiError(400, f"transcript: must be a string, got {type(transcript).__name__}")
        session_id = context.get("session_id")
        if session_id is not None:
            if not isinstance(session_id, str) or not session_id or len(session_id) > MAX_SESSION_ID:
                raise ApiError(
                    400, f"session_id: must be a non-empty string of at most {MAX_SESSION_ID} chars"
                )
            request.scope["judge.session"] = session_id
        try:
            parse_context(event, context)
        except ContextError as exc:
            raise ApiError(400, str(exc)) from None
        if context.get("execution_summary") is not None:
            if transcript is not None:
                raise ApiError(400, "give either execution_summary or an inline transcript, not both")
            root = self.transcripts_root
            context["execution_summary"] = await asyncio.to_thread(
                confine_path, context["execution_summary"], root
            )
        gate = Gate(await self._engine(context.get("agent_name")), self.store, self.audit)
        path = await asyncio.to_thread(write_private, transcript) if transcript is not None else None
        try:
            if session_id is not None and event in STOP_EVENTS:
                async with self.sessions.hold(session_id):
                    decision = await gate.decide(event, context, transcript=path, session_id=session_id)
            else:
                decision = await gate.decide(event, context, transcript=path, session_id=session_id)
        except ContextError as exc:
            raise ApiError(400, str(exc)) from None
        finally:
            if path is not None:
                await asyncio.to_thread(remove_private, path)
        return json_response(decision.to_json())

    async def _engine(self, agent_name: Any) -> Engine:
        """The engine for this request: --config hooks, plus a registered custom agent's.

        The agent is looked up on every request (another worker may have changed it) but
        validated again only when its stored body changed.
        """
        if not (isinstance(agent_name, str) and AGENT_NAME.match(agent_name)):
            return self.engine
        stored = await asyncio.to_thread(self.store.get_agent, agent_name)
        if stored is None:
            return self.engine
        cached = self._agents.get(agent_name)
        if cached is not None and cached[0] == stored:
            return cached[1]
        try:
            agent = validate_custom_agent(stored.get("properties"))
        except ConfigError as exc:
            raise ApiError(500, f"stored custom agent {agent_name!r} is invalid", exc.problems) from None
        engine = Engine(self.settings.config.with_custom_agent(agent_name, agent), judge=self.judge)
        if len(self._agents) >= AGENT_CACHE_SIZE:
            self._agents.clear()
        self._agents[agent_name] = (stored, engine)
        return engine


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
        if self.token is not None and scope.get("path") != "/healthz":
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
    return error_response(exc.status, exc.message, exc.problems)


async def _on_http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    response = error_response(exc.status_code, str(exc.detail), None)
    response.headers.update(exc.headers or {})
    return response


async def _on_bug(request: Request, exc: Exception) -> Response:
    error_log.error("unhandled error on %s %s: %r", request.method, request.url.path, exc)
    return error_response(500, "internal error")


def create_app(settings: ServerSettings, judge: PromptJudge | None = None) -> Starlette:
    """The ASGI app. ``judge`` evaluates prompt hooks (default: the LLM judge)."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    service = Service(settings, judge)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # Enough threads that SQLite/audit writes of many concurrent requests don't queue.
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(32, "judge-io"))
        try:
            yield
        finally:
            service.store.close()

    handler = Callable[[Request], Awaitable[Response]]
    routes: list[tuple[str, handler, list[str]]] = [
        ("/healthz", service.healthz, ["GET"]),
        ("/api/v2/extendedAgent/agents", service.list_agents, ["GET"]),
        ("/api/v2/extendedAgent/agents/{name}", service.agent, ["GET", "PUT", "DELETE"]),
        ("/api/v2/hooks/{event}", service.hook, ["POST"]),
    ]
    app = Starlette(
        routes=[Route(path, fn, methods=methods) for path, fn, methods in routes],
        middleware=[Middleware(ServiceMiddleware, settings=settings)],
        exception_handlers={
            ApiError: _on_api_error,
            HTTPException: _on_http_error,
            Exception: _on_bug,
        },
        lifespan=lifespan,
    )
    app.state.service = service
    return app


def configure_logging() -> None:
    """Request log lines (already JSON) and errors go to stderr, one per line."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    access_log.handlers = [handler]
    access_log.setLevel(logging.INFO)
    access_log.propagate = False
    error_handler = logging.StreamHandler(sys.stderr)
    error_handler.setFormatter(logging.Formatter("judge serve: %(levelname)s %(message)s"))
    error_log.handlers = [error_handler]
    error_log.setLevel(logging.INFO)
    error_log.propagate = False


# ---------------------------------------------------------------------------
# Worker processes (``judge serve --workers N``) build the app from the environment

SETTINGS_ENV = "JUDGE_SERVE_SETTINGS"


def settings_to_env(config_path: str | None, settings: ServerSettings) -> str:
    return json.dumps(
        {
            "config": config_path,
            "data_dir": str(settings.data_dir),
            "transcripts_dir": str(settings.transcripts_dir) if settings.transcripts_dir else None,
            "max_body": settings.max_body,
        }
    )


def app_from_env() -> Starlette:
    """App factory for worker processes (settings in ``JUDGE_SERVE_SETTINGS``)."""
    configure_logging()
    raw = json.loads(os.environ[SETTINGS_ENV])
    config = load_config(raw["config"]) if raw.get("config") else Config()
    settings = ServerSettings(
        config=config,
        data_dir=Path(raw["data_dir"]),
        transcripts_dir=Path(raw["transcripts_dir"]) if raw.get("transcripts_dir") else None,
        max_body=int(raw["max_body"]),
        api_token=os.environ.get(TOKEN_ENV) or None,
    )
    return create_app(settings)
