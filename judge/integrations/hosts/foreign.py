"""``judge claude-code`` run by another host: Copilot CLI and Cursor read Claude Code's settings.

Copilot CLI runs the hooks of a repository's ``.claude/settings.json`` and
``.claude/settings.local.json`` (in trusted folders) with its VS Code compatible input;
Cursor, with "Third-party skills" on, runs those and ``~/.claude/settings.json`` with its
own input and event names. So the entries ``judge claude-code install`` wrote are run by
those hosts too. judge neither judges such a call with the wrong payload nor twice:

* the caller is recognised - Copilot sets ``COPILOT_CLI=1`` in every hook's environment;
  Cursor sets ``CURSOR_VERSION`` and sends ``cursor_version``;
* when judge is registered for that host in its own files (``judge copilot install`` /
  ``judge cursor install``: ``$COPILOT_HOME/hooks/*.json`` or the repository's
  ``.github/hooks/*.json``; ``~/.cursor/hooks.json`` or the project's
  ``.cursor/hooks.json``), that registration serves the event and the Claude Code entry
  steps aside (nothing on stdout, a line on stderr);
* otherwise the Claude Code entry serves the host, through the host's dialect
  (:mod:`.core`), with the configuration and flags it was installed with.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from judge.integrations.hosts.caller import calling_host as calling_host
from judge.integrations.hosts.copilot import copilot_home

#: Bytes of a hooks file read when looking for judge's entries.
MAX_HOOKS_FILE = 1 << 20


def _mentions(path: Path, pattern: re.Pattern[str]) -> bool:
    try:
        with path.open("rb") as handle:
            text = handle.read(MAX_HOOKS_FILE).decode("utf-8", "replace")
    except OSError:
        return False
    return pattern.search(text) is not None


def native_registration(host: str, env: Mapping[str, str], cwd: Path) -> Path | None:
    """The host's own hooks file that registers ``judge <host>``, if any."""
    pattern = re.compile(rf"(?:judge|-m\s+judge)[\"']?\s+{host}(?:\s|\"|$)")
    if host == "copilot":
        project = Path(env.get("COPILOT_PROJECT_DIR") or cwd)
        folders = [copilot_home(env) / "hooks", project / ".github" / "hooks"]
        candidates = [f for folder in folders if folder.is_dir() for f in sorted(folder.glob("*.json"))]
    else:
        project = Path(env.get("CURSOR_PROJECT_DIR") or cwd)
        home = Path(env.get("HOME") or Path.home())
        candidates = [home / ".cursor" / "hooks.json", project / ".cursor" / "hooks.json"]
    for candidate in candidates:
        if candidate.is_file() and _mentions(candidate, pattern):
            return candidate
    return None
