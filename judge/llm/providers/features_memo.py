"""What servers were found not to support, remembered across processes.

A provider learns what its server does not support (:mod:`judge.llm.providers.features`)
and keeps it as long as its SDK client lives. ``judge claude-code`` is a new process for
every hook call, so without this module it would learn again on every call: on llama.cpp
each Stop judgement would start with a request whose ``tool_choice: required`` the server
ignores — up to ``JUDGE_MAX_OUTPUT_TOKENS`` of a slow local model writing an unread answer.

Within :func:`remembering`, providers start from what an earlier process learned about
the same server and model (:func:`attach`) and write down what they learn. The file is
JSON, owner-only, replaced atomically; an entry is forgotten :data:`REMEMBER_SECONDS`
after it was learned (a server restarted with other flags is then asked afresh). It is a
cache: a missing, unreadable or corrupt file is the same as an empty one, and a file that
cannot be written only costs the learning again. Forgetting what was wrong costs nothing
either: every feature switched off has a fallback (schema-forced calls, text tool calls,
a verdict parsed from text).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast, get_args
from urllib.parse import urlsplit

from judge.llm.providers.features import Feature, Features

#: How long what was learned about a server is trusted (seconds).
REMEMBER_SECONDS = 24 * 3600
#: Most servers (provider, URL, model) kept; the oldest are dropped first.
MAX_SERVERS = 64
#: The file's name beside ``judge claude-code``'s state file.
FILE_NAME = "server-features.json"
#: Largest file read (anything bigger is not ours: treated as empty).
MAX_BYTES = 256 * 1024

_FEATURES: frozenset[str] = frozenset(get_args(Feature))
_CURRENT: contextvars.ContextVar[FeatureMemo | None] = contextvars.ContextVar("judge_memo", default=None)


class FeatureMemo:
    """A JSON file of the features each server was found not to support."""

    def __init__(self, path: Path, seconds: float = REMEMBER_SECONDS) -> None:
        self.path = path
        self.seconds = seconds

    def _entries(self) -> dict[str, dict[str, Any]]:
        """The file's entries still young enough to trust (nothing on any problem)."""
        try:
            with self.path.open("rb") as handle:
                raw = handle.read(MAX_BYTES + 1)
            data = json.loads(raw) if len(raw) <= MAX_BYTES else None
        except (OSError, ValueError):
            return {}
        servers = data.get("servers") if isinstance(data, dict) and data.get("version") == 1 else None
        if not isinstance(servers, dict):
            return {}
        now = time.time()
        return {
            key: entry
            for key, entry in servers.items()
            if isinstance(entry, dict)
            and isinstance(entry.get("learned"), int | float)
            and 0 <= now - entry["learned"] < self.seconds
            and isinstance(entry.get("off"), list)
        }

    def recall(self, key: str) -> list[Feature]:
        """The features found unsupported for ``key`` (see :func:`server_key`)."""
        entry = self._entries().get(key, {})
        names = entry.get("off", [])
        return [cast(Feature, name) for name in names if isinstance(name, str) and name in _FEATURES]

    def remember(self, key: str, off: list[str]) -> None:
        """Record that ``key`` does not support ``off`` (best effort: errors are ignored)."""
        entries = self._entries()
        entries[key] = {"off": sorted(off), "learned": time.time()}
        newest = sorted(entries.items(), key=lambda item: item[1]["learned"])[-MAX_SERVERS:]
        text = json.dumps({"version": 1, "servers": dict(newest)}, indent=1, sort_keys=True)
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".server-features.", dir=self.path.parent)  # mode 0600
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    handle.write(text)
                os.replace(tmp, self.path)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)


@contextlib.contextmanager
def remembering(path: Path | None) -> Iterator[FeatureMemo | None]:
    """Within this block (and the asyncio tasks it starts), providers read and write
    what they learn about their servers in ``path``; ``None``: nothing is remembered."""
    memo = FeatureMemo(path) if path is not None else None
    token = _CURRENT.set(memo)
    try:
        yield memo
    finally:
        _CURRENT.reset(token)


def server_key(provider: str, base_url: str | None, model: str, structured_output: bool) -> str:
    """What a memo entry is about: provider, server (no credentials, no query) and model."""
    server = "default"
    if base_url:
        parts = urlsplit(base_url)
        host = parts.hostname or ""
        with contextlib.suppress(ValueError):
            host = f"{host}:{parts.port}" if parts.port else host
        server = f"{parts.scheme}://{host}{parts.path.rstrip('/')}"
    return f"{provider} {server} {model}" + ("" if structured_output else " unstructured")


def attach(features: Features, key: str) -> None:
    """Start ``features`` from what the current memo knows about ``key`` and record what
    is dropped from now on (nothing outside :func:`remembering`)."""
    memo = _CURRENT.get()
    if memo is None or features.on_drop is not None:
        return  # nothing to remember in, or already attached (features shared by a client)
    for name in memo.recall(key):
        setattr(features, name, False)
    features.on_drop = lambda learned: memo.remember(key, learned.off())
