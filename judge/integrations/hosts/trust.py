"""Codex CLI's hook trust records, kept in ``config.toml`` beside its ``hooks.json``.

Codex (0.171) runs a hook an administrator did not install only when ``$CODEX_HOME/config.toml``
holds a record for it::

    [hooks.state."/abs/path/hooks.json:pre_tool_use:0:0"]
    enabled = true
    trusted_hash = "sha256:<hex>"

keyed by the hooks file, the event (snake_case), the matcher group's index in the event's
list and the handler's index in the group; the hash is the SHA-256 of the compact,
key-sorted JSON of the handler's normalised identity (:func:`trusted_hash`). Without a
record Codex skips the hook without a word - what Codex's ``/hooks`` review writes when a
user approves a hook, ``judge codex install`` writes for judge's own entries.

Because records are keyed by position, removing or moving judge's entries would orphan the
records of the user's own hooks behind them (and Codex would then skip those silently):
:func:`rekeyed_state` moves every record with its hook. The file is edited as text (its
comments and layout kept) and read back with ``tomllib``; an edit that does not read back
as intended is refused, nothing written.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from collections.abc import Callable, Iterator
from typing import Any

#: Codex events whose matcher is ignored (and so left out of the hook's identity).
NO_MATCHER_EVENTS = frozenset({"Stop", "UserPromptSubmit", "PreCompact", "PostCompact"})
_HEADER = re.compile(r"^\s*\[\s*hooks\s*\.\s*state\s*\.\s*(\"(?:[^\"\\]|\\.)*\"|'[^']*')\s*\]\s*(?:#.*)?$")
_ANY_HEADER = re.compile(r"^\s*\[")


class TrustError(Exception):
    """The trust records cannot be updated (message for the user)."""


def snake(event: str) -> str:
    """``PreToolUse`` -> ``pre_tool_use`` (Codex's event label in trust keys)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


def trusted_hash(event: str, matcher: str | None, handler: dict[str, Any]) -> str:
    """The ``trusted_hash`` Codex expects for one command handler of a matcher group."""
    timeout = handler.get("timeout")
    if event == "SessionEnd":
        timeout = min(max(timeout if isinstance(timeout, int) else 1, 1), 3)
    else:
        timeout = max(timeout if isinstance(timeout, int) else 600, 1)
    normal: dict[str, Any] = {
        "type": "command",
        "command": handler.get("command"),
        "timeout": timeout,
        "async": bool(handler.get("async", False)),
    }
    if handler.get("statusMessage") is not None:
        normal["statusMessage"] = handler["statusMessage"]
    identity: dict[str, Any] = {"event_name": snake(event), "hooks": [normal]}
    if matcher is not None and event not in NO_MATCHER_EVENTS:
        identity["matcher"] = matcher
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _handlers(document: dict[str, Any]) -> Iterator[tuple[str, int, int, Any, Any]]:
    """(event, group index, handler index, group matcher, handler) of a hooks document."""
    hooks = document.get("hooks")
    if not isinstance(hooks, dict):
        return
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            continue
        for g, group in enumerate(groups):
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list):
                continue
            for h, handler in enumerate(handlers):
                yield event, g, h, group.get("matcher"), handler


def key(path: str, event: str, group: int, handler: int) -> str:
    return f"{path}:{snake(event)}:{group}:{handler}"


def rekeyed_state(
    state: dict[str, Any],
    path: str,
    before: dict[str, Any],
    after: dict[str, Any],
    ours: Callable[[Any], bool],
) -> dict[str, Any]:
    """``state`` (the ``[hooks.state]`` table) for the hooks file at ``path`` changed from
    ``before`` to ``after``: the user's records follow their hooks to their new positions,
    judge's (``ours``) are replaced by records trusting the handlers ``after`` holds."""
    out = {k: v for k, v in state.items() if not k.startswith(f"{path}:")}
    old = [(e, g, h) for e, g, h, _, handler in _handlers(before) if not ours(handler)]
    new = [(e, g, h) for e, g, h, _, handler in _handlers(after) if not ours(handler)]
    for (event, g, h), (new_event, ng, nh) in zip(old, new, strict=False):
        record = state.get(key(path, event, g, h))
        if record is not None and event == new_event:
            out[key(path, event, ng, nh)] = record
    for event, g, h, matcher, handler in _handlers(after):
        if ours(handler):
            trusted = trusted_hash(event, matcher if isinstance(matcher, str) else None, handler)
            out[key(path, event, g, h)] = {"enabled": True, "trusted_hash": trusted}
    return out


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    raise TrustError(f"a trust record holds a value judge does not rewrite ({value!r})")


def _header_key(line: str) -> str | None:
    match = _HEADER.match(line)
    if match is None:
        return None
    try:
        return str(tomllib.loads(f"k = {match.group(1)}")["k"])
    except tomllib.TOMLDecodeError:
        return None


def _without_state(document: dict[str, Any]) -> dict[str, Any]:
    hooks = dict(document.get("hooks") or {})
    hooks.pop("state", None)
    return {**document, "hooks": hooks}


def edited_config(text: str, path: str, state: dict[str, Any]) -> str:
    """``text`` (a config.toml) with the records of ``path`` replaced by those of ``state``
    for it; :class:`TrustError` when the result would not read back as ``state``."""
    try:
        current = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TrustError(f"config.toml is not valid TOML ({exc}); fix it by hand first") from None
    present = current.get("hooks", {}).get("state", {})
    present = present if isinstance(present, dict) else {}
    wanted = {k: v for k, v in state.items() if k.startswith(f"{path}:")}
    stale = {k for k in present if k.startswith(f"{path}:") and wanted.get(k) != present[k]}
    added = {k: v for k, v in wanted.items() if present.get(k) != v}
    if not stale and not added:
        return text
    kept: list[str] = []
    skipping = False
    for line in text.splitlines(keepends=True):
        header = _header_key(line)
        if header is not None:
            skipping = header in stale
        elif _ANY_HEADER.match(line):
            skipping = False
        if not skipping:
            kept.append(line)
    out = "".join(kept)
    if added and out and not out.endswith("\n"):
        out += "\n"
    for record_key, record in added.items():
        if not isinstance(record, dict):
            raise TrustError(f"the trust record {record_key} is not a table")
        body = "".join(f"{name} = {_toml_value(value)}\n" for name, value in record.items())
        out += f"\n[hooks.state.{json.dumps(record_key, ensure_ascii=False)}]\n{body}"
    try:
        reread = tomllib.loads(out)
    except tomllib.TOMLDecodeError as exc:
        raise TrustError(f"updating config.toml's [hooks.state] would break the file ({exc})") from None
    if reread.get("hooks", {}).get("state", {}) != state or _without_state(reread) != _without_state(current):
        raise TrustError(
            "config.toml keeps [hooks.state] in a form judge does not edit (inline tables or "
            "dotted keys); approve judge's hooks in Codex's /hooks review instead"
        )
    return out
