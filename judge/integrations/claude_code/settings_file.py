"""Agent hosts' settings files as installers read and write them: strict JSON objects,
read refusing special files and nesting bombs, written in one step through symlinks with
the file's mode kept (:func:`read_settings`, :func:`settings_text`,
:func:`write_atomically`); :class:`InstallError` is what an installer tells the user."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from judge.files import NestedTooDeeply, RefusedFile, load_json, read_text


class InstallError(Exception):
    """The installer cannot proceed (message for the user)."""


def too_deep(path: Path) -> str:
    return f"{path} is nested too deeply; fix it by hand first, nothing was changed"


def settings_text(settings: dict[str, Any]) -> str:
    """The settings as Claude Code reads them: strict JSON (no NaN or Infinity), text kept
    as written unless it holds a lone surrogate (then written as its escape)."""
    try:
        text = json.dumps(settings, indent=2, ensure_ascii=False, allow_nan=False)
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(settings, indent=2, allow_nan=False)
    return text + "\n"


def read_settings(path: Path) -> tuple[str, dict[str, Any]]:
    """The settings file's text and JSON object (``""``, ``{}`` when there is none); a FIFO,
    a device or anything else than a regular file is refused."""
    try:
        text = read_text(path, "settings file")
    except FileNotFoundError:
        return "", {}
    except RefusedFile as exc:
        raise InstallError(f"{exc}; nothing was changed") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InstallError(f"cannot read {path}: {exc}") from None
    if not text.strip():
        return text, {}
    try:
        data = load_json(text)
    except json.JSONDecodeError as exc:
        raise InstallError(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "fix it by hand first, nothing was changed"
        ) from None
    except NestedTooDeeply:
        raise InstallError(too_deep(path)) from None
    if not isinstance(data, dict):
        raise InstallError(f"{path} must hold a JSON object, got {type(data).__name__}")
    return text, data


def write_atomically(path: Path, text: str) -> None:
    """Replace ``path``'s content with ``text`` in one step. A symlink (a settings file kept
    in a dotfiles repository) is written through to its target; a new file gets the
    umask's mode; a read-only file is refused."""
    path = Path(os.path.realpath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        mode = path.stat().st_mode & 0o777
        if not mode & 0o222:
            raise InstallError(f"{path} is read-only; make it writable to change it, nothing was changed")
    else:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(prefix=".settings-", suffix=".json", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
