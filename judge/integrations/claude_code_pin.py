"""The configuration a Claude Code session started with, kept for the whole session.

Claude Code reads its hooks when a session starts and refuses the agent's edits of its
own settings files. judge reads its configuration on every hook call, and nothing stops
an agent with Bash or Write from editing that file: one ``hooks: {}`` and the Stop gate
that sent it back is gone, silently. So the first call of a session **pins** the
configuration it loaded: for the rest of the session a changed, broken or deleted file
does not change how the session is judged. The first call after a change says so in a
``systemMessage`` (once per distinct change): the user learns that the file changed,
whoever changed it, and that the change applies to new sessions. ``JUDGE_PIN_CONFIG=0``
in the hook's environment (Claude Code's settings, which the agent cannot edit) turns
pinning off: every call then reads the file as it is.

Files, owner-only, in ``config-pins/`` beside the state file:

- ``<sha256>.conf``: a configuration's text, named by its SHA-256, written when it first
  loaded and validated (together with the fast path's config index);
- ``<key>.json``: one session's pin, ``{"format", "config", "sha256", "told"}``, where the
  key hashes the session id and the configuration's real path.

Files unused for :data:`PRUNE_SECONDS` are removed when a new session pins. This module
uses the standard library only: the fast path (:mod:`claude_code_fast`) checks pins too.

Limits: the pin guards the configuration file, not the files it names (a script on disk,
an ``include``d file) and not the state folder itself. An agent that runs shell commands
as the same user can still delete the pins; the Stop gate then judges with the file as
it is and says that the session's configuration was lost.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from typing import Any, NamedTuple

FORMAT = 1
#: Pins and copies not used for this long are removed (seconds).
PRUNE_SECONDS = 30 * 24 * 3600
#: A pin in use gets its modification time renewed at most this often (seconds).
TOUCH_SECONDS = 24 * 3600
#: Largest pin file read (anything bigger is not ours).
MAX_PIN_BYTES = 64 * 1024
FOLDER = "config-pins"


def enabled(environ: dict[str, str] | os._Environ[str] = os.environ) -> bool:
    """Whether sessions keep their configuration (``JUDGE_PIN_CONFIG``, default on)."""
    return environ.get("JUDGE_PIN_CONFIG", "1").strip().lower() not in ("0", "off", "false", "no")


def digest(text: str) -> str:
    """The SHA-256 of a configuration's text."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _folder(state_path: str) -> str:
    return os.path.join(os.path.dirname(state_path) or ".", FOLDER)


def _pin_path(state_path: str, session_id: str, config_path: str) -> str:
    key = hashlib.sha256(f"{session_id}\0{os.path.realpath(config_path)}".encode()).hexdigest()[:32]
    return os.path.join(_folder(state_path), f"{key}.json")


def _copy_path(state_path: str, sha: str) -> str:
    return os.path.join(_folder(state_path), f"{sha}.conf")


def _write(path: str, text: str) -> None:
    """Replace ``path`` atomically with ``text``, owner-only (its folder and the state
    folder above it too, when this creates them)."""
    folder = os.path.dirname(path)
    os.makedirs(os.path.dirname(folder) or ".", mode=0o700, exist_ok=True)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogatepass") as out:
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _touch(path: str) -> None:
    with contextlib.suppress(OSError):
        if time.time() - os.stat(path).st_mtime > TOUCH_SECONDS:
            os.utime(path)


def keep_copy(state_path: str, text: str) -> str:
    """Keep ``text`` (a configuration that loaded and validated) by its SHA-256; the SHA."""
    sha = digest(text)
    path = _copy_path(state_path, sha)
    with contextlib.suppress(OSError):
        if os.path.exists(path):
            _touch(path)
        else:
            _write(path, text)
    return sha


def read_pin(state_path: str, session_id: str, config_path: str) -> dict[str, Any] | None:
    """The session's pin, or None (none yet, or not readable as one)."""
    try:
        with open(_pin_path(state_path, session_id, config_path), "rb") as src:
            data = json.loads(src.read(MAX_PIN_BYTES + 1))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("sha256"), str):
        return None
    return data


def write_pin(state_path: str, session_id: str, config_path: str, sha: str, told: str | None = None) -> None:
    """Pin the configuration ``sha`` for the session (best effort)."""
    pin = {"format": FORMAT, "config": os.path.realpath(config_path), "sha256": sha, "told": told}
    path = _pin_path(state_path, session_id, config_path)
    fresh = not os.path.exists(path)
    with contextlib.suppress(OSError):
        _write(path, json.dumps(pin))
    if fresh:
        prune(state_path)


def prune(state_path: str, now: float | None = None) -> int:
    """Remove pins and copies unused for :data:`PRUNE_SECONDS`; how many were removed."""
    limit = (time.time() if now is None else now) - PRUNE_SECONDS
    removed = 0
    with contextlib.suppress(OSError), os.scandir(_folder(state_path)) as entries:
        for entry in entries:
            if entry.name.endswith((".json", ".conf", ".tmp")) and entry.stat().st_mtime < limit:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
                    removed += 1
    return removed


class SessionConfig(NamedTuple):
    """What one call of a session loads: ``text`` (None: the file's own text, ``current``)
    and a ``note`` for the user (None: nothing to tell)."""

    text: str | None
    note: str | None = None
    #: the session has no pin yet: pin what loads
    first: bool = False


def session_config(
    state_path: str, session_id: str | None, config_path: str, current: str | None
) -> SessionConfig:
    """The configuration text this call of ``session_id`` must load.

    ``current`` is the file's text now (None: missing or unreadable). Without a session
    id, with pinning off, on the session's first call, or while the file is unchanged,
    that is the file. Otherwise it is the pinned text, and the first call after each
    distinct change gets a note.
    """
    if not session_id or not enabled():
        return SessionConfig(None)
    pin = read_pin(state_path, session_id, config_path)
    if pin is None:
        return SessionConfig(None, first=True)
    sha = pin["sha256"]
    now = digest(current) if current is not None else None
    if now == sha:
        _touch(_pin_path(state_path, session_id, config_path))
        return SessionConfig(None)
    what = "changed" if current is not None else "became unreadable"
    copy = _copy_path(state_path, sha)
    text: str | None = None
    with contextlib.suppress(OSError), open(copy, encoding="utf-8", errors="replace") as src:
        text = src.read()
    if text is None or digest(text) != sha:
        # The pinned text is gone: judge with the file as it is, pinned from now on, and say so.
        gone = (
            f"{config_path} {what} during this session and the configuration the session "
            f"started with is gone from {_folder(state_path)}; judging with the file as it is now"
        )
        return SessionConfig(None, note=gone, first=True)
    _touch(copy)
    told = now or "unreadable"
    note: str | None = None
    if pin.get("told") != told:
        with contextlib.suppress(OSError):
            write_pin(state_path, session_id, config_path, sha, told=told)
        note = (
            f"{config_path} {what} during this session; this session is still judged by the "
            "configuration it started with (the change applies to new sessions)"
        )
    return SessionConfig(text, note=note)
