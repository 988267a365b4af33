"""What ``judge claude-code install --http URL`` writes: Claude Code ``type: "http"`` hooks
posting to ``judge serve`` (:mod:`judge.service.claude_code`), and which events may have one.

Claude Code posts an http hook the same JSON a command hook reads and reads its JSON answer
the same way, but when the request fails (the service down, a timeout, a 4xx or 5xx) it
lets the stop or the tool call through — on PreToolUse unless the entry says
``"onFailure": "block"``, which versions before 2.1.295 ignore. So only events whose judge
hooks fail open get http entries; PreToolUse, PreSkillShellCommand and every event with a
hook that fails closed keep their command entries, and so does SessionStart (Claude Code
runs no http hook there).
"""

from __future__ import annotations

from typing import Any

from judge.config import Hook
from judge.integrations.claude_code.protocol import CONFIG_EVENT

#: ``judge serve``'s endpoint for Claude Code's http hooks, and the token's variable.
HTTP_PATH = "/api/v2/claude-code"
TOKEN_ENV = "JUDGE_API_TOKEN"


def is_http_handler(handler: Any) -> bool:
    """Whether a settings hook handler posts to ``judge serve``'s Claude Code endpoint."""
    if not isinstance(handler, dict) or handler.get("type") != "http":
        return False
    url = handler.get("url")
    return isinstance(url, str) and HTTP_PATH in url


def http_handler(base: str, judge_timeout: int, timeout: int) -> dict[str, Any]:
    """An http hook posting to ``judge serve`` at ``base`` (its Claude Code endpoint), with
    judge's deadline in the URL and the service's token from ``$JUDGE_API_TOKEN``."""
    url = base.rstrip("/")
    if not url.endswith(HTTP_PATH):
        url += HTTP_PATH
    return {
        "type": "http",
        "url": f"{url}?timeout={judge_timeout}",
        "timeout": timeout,
        "headers": {"Authorization": f"Bearer ${TOKEN_ENV}"},
        "allowedEnvVars": [TOKEN_ENV],
    }


def http_serves(event: str, hooks: list[Hook]) -> bool:
    """Whether ``event`` may be an http hook: Claude Code lets a stop or a tool call through
    when an http hook fails (the service down, a timeout), so an event whose judge hooks
    fail closed keeps its command entry, and PreToolUse always does."""
    if event in ("PreToolUse", "PreSkillShellCommand"):
        return False
    return not any(hook.fails_closed(CONFIG_EVENT[event]) for hook in hooks)
