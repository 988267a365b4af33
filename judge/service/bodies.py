"""Request bodies of the HTTP service: size-limited reading, strict JSON and safe YAML
parsing, and the JSON error/response shapes (``{"error": ..., "problems": [...]}``).

Deep nesting, non-finite numbers, duplicate keys and lone surrogates are refused before
any hook runs.
"""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import yaml
from starlette.requests import Request
from starlette.responses import Response

from judge.config import parse_yaml
from judge.errors import ApiError

#: Default request body limit: 10 MiB (inline transcripts can be large).
DEFAULT_MAX_BODY = 10 * 1024 * 1024
#: Deepest JSON/YAML nesting accepted in a request body.
MAX_DEPTH = 64
#: YAML body limit: the pure-Python parser takes about 15 s of CPU per MiB of short items.
MAX_YAML_BODY = 256 * 1024
#: Longest integer accepted in a YAML body (Python's own limit for decimal strings).
MAX_INT_CHARS = 4300
JSON_TYPES = ("application/json", "text/json")
YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml")
_PARSE_IN_THREAD = 256 * 1024


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
