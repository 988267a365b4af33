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

What is pinned is the configuration's text **and the calibration files its hooks name**
(``calibration: {file: ...}``, :mod:`judge.hooks.calibration`): calibration can only make
a hook shadow, so a calibration file an agent could edit or delete would be a way to
switch its own judge off. A session keeps the calibration it started with; an edited,
broken or deleted calibration file changes nothing for it, and is told like a changed
configuration. The two are kept together as one text (:func:`bundle`): the
configuration, then a NUL-marked JSON of the calibration files' texts (a NUL byte
cannot occur in a valid configuration), and a configuration without calibrated hooks is
kept as its text alone.

Files, owner-only, in ``config-pins/`` beside the state file:

- ``<sha256>.conf``: a configuration's text (with its calibration), named by its SHA-256,
  written when it first loaded and validated (together with the fast path's config index);
- ``<key>.json``: one session's pin, ``{"format", "config", "sha256", "told"}``, where the
  key hashes the session id and the configuration's real path.

Files unused for :data:`PRUNE_SECONDS` are removed when a new session pins. This module
uses the standard library only: the fast path
(:mod:`~judge.integrations.claude_code.fast_path`) checks pins too.

Limits: the pin guards the configuration file, not the files it names (a script on disk,
an ``include``d file) and not the state folder itself. An agent that runs shell commands
as the same user can still delete the pins; the Stop gate then judges with the file as
it is and says that the session's configuration was lost.
"""

from __future__ import annotations

import json
import os
import re
import stat
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # (typing costs milliseconds on every hook event)
    from collections.abc import Callable, Mapping
    from typing import Any

try:  # the interpreter's own SHA-256: hashlib's OpenSSL binding costs milliseconds per event
    from _sha256 import sha256 as _sha256  # type: ignore[import-not-found]  # Python 3.11
except ImportError:
    try:
        from _sha2 import sha256 as _sha256  # type: ignore[import-not-found,no-redef]  # 3.12+
    except ImportError:
        from hashlib import sha256 as _sha256  # type: ignore[assignment]
sha256: Callable[[bytes], Any] = _sha256

FORMAT = 1
#: Pins and copies not used for this long are removed (seconds).
PRUNE_SECONDS = 30 * 24 * 3600
#: A pin in use gets its modification time renewed at most this often (seconds).
TOUCH_SECONDS = 24 * 3600
#: Largest pin file read (anything bigger is not ours).
MAX_PIN_BYTES = 64 * 1024
#: Largest process environment read (``/proc/PID/environ``).
MAX_ENVIRON_BYTES = 4 * 1024 * 1024
#: Largest configuration copy read back (a configuration file's own limit).
MAX_COPY_BYTES = 64 * 1024 * 1024
FOLDER = "config-pins"
_SHA = re.compile(r"[0-9a-f]{64}")
#: Where a bundle's calibration files begin (see :func:`bundle`).
CALIBRATION_MARK = "\x00judge-calibration\x00"


def bundle(text: str, calibration: Mapping[str, tuple[str | None, str | None]]) -> str:
    """A configuration's text with the calibration files it names: path -> (text, or why
    it could not be read). Without any, the text alone."""
    if not calibration:
        return text
    files = {
        path: {"text": found, "problem": problem} for path, (found, problem) in sorted(calibration.items())
    }
    return text + CALIBRATION_MARK + json.dumps(files, ensure_ascii=False)


def unbundle(text: str) -> tuple[str, dict[str, tuple[str | None, str | None]]]:
    """:func:`bundle` undone: the configuration's text and its calibration files (a damaged
    part reads as no files: every calibrated hook is then ``missing``, never enforced)."""
    config, mark, rest = text.partition(CALIBRATION_MARK)
    if not mark:
        return text, {}
    try:
        files = json.loads(rest)
    except (ValueError, RecursionError):
        return config, {}
    found: dict[str, tuple[str | None, str | None]] = {}
    for path, entry in files.items() if isinstance(files, dict) else ():
        if isinstance(entry, dict):
            body, problem = entry.get("text"), entry.get("problem")
            found[str(path)] = (
                body if isinstance(body, str) else None,
                problem if isinstance(problem, str) else None,
            )
    return config, found


def enabled(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether sessions keep their configuration (``JUDGE_PIN_CONFIG``, default on)."""
    return environ.get("JUDGE_PIN_CONFIG", "1").strip().lower() not in ("0", "off", "false", "no")


def digest(text: str) -> str:
    """The SHA-256 of a configuration's text."""
    return str(sha256(text.encode("utf-8", "surrogatepass")).hexdigest())


def _folder(state_path: str) -> str:
    return os.path.join(os.path.dirname(state_path) or ".", FOLDER)


def _pin_path(state_path: str, session_id: str, config_path: str) -> str:
    # The path as the hook command names it, not where it leads: a symlink swapped in for
    # the file must not make a session look new.
    name = f"{session_id}\0{os.path.abspath(config_path)}".encode("utf-8", "surrogatepass")
    return os.path.join(_folder(state_path), f"{sha256(name).hexdigest()[:32]}.json")


def _read_small(path: str, limit: int) -> bytes | None:
    """A regular file's bytes, or None (missing, not a regular file - never blocking on a
    FIFO -, unreadable, or over ``limit``). :func:`judge.files.read_bytes` does the same
    with errors, but importing it would put ``pathlib`` on the fast path."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(os.dup(fd), "rb") as src:  # (still O_NONBLOCK)
            data = src.read(limit + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    # None: a special file whose reads wait (``stat`` calls it regular); the full reader
    # then refuses it with its name.
    return data if data is not None and len(data) <= limit else None


def _copy_path(state_path: str, sha: str) -> str:
    return os.path.join(_folder(state_path), f"{sha}.conf")


def write_private(path: str, text: str) -> None:
    """Replace ``path`` atomically with ``text``, owner-only (its folder and the state
    folder above it too, when this creates them). Also the fast path's config index."""
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
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _touch(path: str) -> None:
    try:
        if time.time() - os.stat(path).st_mtime > TOUCH_SECONDS:
            os.utime(path)
    except OSError:
        pass


def keep_copy(state_path: str, text: str) -> str:
    """Keep ``text`` (a configuration that loaded and validated) by its SHA-256; the SHA."""
    sha = digest(text)
    path = _copy_path(state_path, sha)
    try:
        if os.path.exists(path):
            _touch(path)
        else:
            write_private(path, text)
    except OSError:
        pass
    return sha


def read_pin(state_path: str, session_id: str, config_path: str) -> dict[str, Any] | None:
    """The session's pin, or None (none yet, or not readable as one)."""
    raw = _read_small(_pin_path(state_path, session_id, config_path), MAX_PIN_BYTES)
    try:
        data = json.loads(raw) if raw is not None else None
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return None
    sha = data.get("sha256")
    return data if isinstance(sha, str) and _SHA.fullmatch(sha) else None


def write_pin(
    state_path: str,
    session_id: str,
    config_path: str,
    sha: str,
    told: str | None = None,
    resumed_from: str | None = None,
) -> bool:
    """Pin the configuration ``sha`` for the session; whether it could be written.
    ``resumed_from``: the configuration the session had before it was resumed (the next
    judged call says that it changed)."""
    pin = {"format": FORMAT, "config": os.path.abspath(config_path), "sha256": sha, "told": told}
    if resumed_from is not None and resumed_from != sha:
        pin["resumed_from"] = resumed_from
    path = _pin_path(state_path, session_id, config_path)
    fresh = not os.path.exists(path)
    try:
        write_private(path, json.dumps(pin))
    except OSError:
        return False
    if fresh:
        prune(state_path)
    return True


def repin(state_path: str, session_id: str, config_path: str, sha: str) -> bool:
    """Pin ``sha`` for a session Claude Code starts again (``--resume``): the file as it is
    now, noting the configuration it had if that differs. Not for a Claude Code started
    from inside another one (:func:`nested`): there it only keeps an existing pin."""
    old = read_pin(state_path, session_id, config_path)
    if nested():  # nothing to write: keep the pin, and a lost one stays lost (it is told)
        return old is not None and bool(old["sha256"] == sha)
    before = old.get("resumed_from") if old is not None else None  # (a notice not given yet)
    if not (isinstance(before, str) and _SHA.fullmatch(before)):
        before = old["sha256"] if old is not None else None
    return write_pin(state_path, session_id, config_path, sha, resumed_from=before)


def nested(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the Claude Code running this hook was started from inside another Claude
    Code session - say, by an agent's Bash running ``claude --resume <its session>`` to
    have its own session re-pinned to an edited file. Claude Code marks its children's
    environment (``CLAUDECODE``), and its own process (``CLAUDE_PID``) started without the
    mark unless its parent was one. Linux (``/proc``); elsewhere False."""
    pid = environ.get("CLAUDE_PID", "")
    if not pid.isdigit():
        return False
    started_with = _read_small(f"/proc/{pid}/environ", MAX_ENVIRON_BYTES)
    return started_with is not None and (b"\0" + started_with).find(b"\0CLAUDECODE=") >= 0


def prune(state_path: str, now: float | None = None) -> int:
    """Remove pins and copies unused for :data:`PRUNE_SECONDS`; how many were removed."""
    limit = (time.time() if now is None else now) - PRUNE_SECONDS
    removed = 0
    try:
        with os.scandir(_folder(state_path)) as entries:
            for entry in entries:
                try:
                    if entry.name.endswith((".json", ".conf", ".tmp")) and entry.stat().st_mtime < limit:
                        os.unlink(entry.path)
                        removed += 1
                except OSError:
                    pass
    except OSError:
        pass
    return removed


class SessionConfig:
    """What one call of a session loads: ``text`` (None: the file's own text, ``current``)
    and a ``note`` for the user (None: nothing to tell); ``first``: the session has no pin
    yet, pin what loads."""

    __slots__ = ("first", "note", "text")

    def __init__(self, text: str | None, note: str | None = None, first: bool = False) -> None:
        self.text, self.note, self.first = text, note, first

    def __repr__(self) -> str:
        return f"SessionConfig(text={self.text!r}, note={self.note!r}, first={self.first!r})"


def session_config(
    state_path: str, session_id: str | None, config_path: str, current: str | None, shown: str | None = None
) -> SessionConfig:
    """The configuration text this call of ``session_id`` must load.

    ``current`` is the file's text now, as :func:`bundle` keeps it (None: missing or
    unreadable); ``shown`` names what changed in the notes (default: ``config_path``). Without a session
    id, with pinning off, on the session's first call, or while the file is unchanged,
    that is the file. Otherwise it is the pinned text, and the first call after each
    distinct change gets a note.
    """
    if not session_id or not enabled():
        return SessionConfig(None)
    shown = shown or config_path
    pin = read_pin(state_path, session_id, config_path)
    if pin is None:
        return SessionConfig(None, first=True)
    sha = pin["sha256"]
    now = digest(current) if current is not None else None
    if now == sha:
        _touch(_pin_path(state_path, session_id, config_path))
        if pin.get("resumed_from"):  # said once, on the first judged call after the resume
            if not nested():  # (a run inside another session does not use the notice up)
                write_pin(state_path, session_id, config_path, sha, told=pin.get("told"))
            return SessionConfig(
                None, note=f"{shown} changed before this session was resumed; judged as it is now"
            )
        return SessionConfig(None)
    what = "changed" if current is not None else "became unreadable"
    copy = _copy_path(state_path, sha)
    raw = _read_small(copy, MAX_COPY_BYTES)
    text = raw.decode("utf-8", "replace") if raw is not None else None
    if text is None or digest(text) != sha:
        # The pinned text is gone: judge with the file as it is, pinned from now on, and say so.
        gone = (
            f"{shown} {what} during this session and the configuration the session "
            f"started with is gone from {_folder(state_path)}; judging with the file as it is now"
        )
        return SessionConfig(None, note=gone, first=True)
    _touch(copy)
    told = now or "unreadable"
    note: str | None = None
    if pin.get("told") != told:
        if not nested():  # (a run inside another session does not use the notice up)
            write_pin(state_path, session_id, config_path, sha, told=told)
        note = (
            f"{shown} {what} during this session; this session is still judged by the "
            "configuration it started with (the change applies to new sessions)"
        )
    return SessionConfig(text, note=note)
