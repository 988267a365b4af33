"""Which host runs ``judge claude-code``: Claude Code, or Copilot CLI or Cursor reading
Claude Code's settings (:mod:`judge.integrations.hosts.foreign` says what follows).
Standard library only: a hook process asks before it hands an event to the resident judge,
which answers in Claude Code's dialect."""

from __future__ import annotations

from collections.abc import Mapping


def calling_host(env: Mapping[str, str], data: bytes | None) -> str | None:
    """The host running ``judge claude-code`` when it is not Claude Code (``copilot``,
    ``cursor``), else ``None``."""
    if env.get("COPILOT_CLI") == "1":
        return "copilot"
    if env.get("CURSOR_VERSION") or (data is not None and b'"cursor_version"' in data[: 64 * 1024]):
        return "cursor"
    return None
