"""Integrations: the Claude Code hook adapter and helpers for hand-written agent loops.

* :func:`wrap_dispatcher` — PreToolUse/PostToolUse hooks around an agent's ``call_tool``;
* :class:`SessionFacts` — the frozen, trusted session facts security decisions rest on;
* :class:`StopGate` — the Stop gate for an agent loop (continue with a reason, or stop).

The Claude Code adapter (``judge claude-code``) lives in :mod:`judge.integrations.claude_code.adapter`
and is imported lazily by the CLI.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # (typing costs milliseconds, and `judge claude-code` runs per hook event)
    from typing import Any

    from judge.integrations.dispatcher import SessionFacts, blocked_result, wrap_dispatcher
    from judge.integrations.stop_gate import StopGate, StopVerdict, render_messages

__all__ = ["SessionFacts", "StopGate", "StopVerdict", "blocked_result", "render_messages", "wrap_dispatcher"]

# Imported on first use: ``judge claude-code`` runs once per tool call and needs none of them.
_LAZY = {
    "SessionFacts": "judge.integrations.dispatcher",
    "blocked_result": "judge.integrations.dispatcher",
    "wrap_dispatcher": "judge.integrations.dispatcher",
    "StopGate": "judge.integrations.stop_gate",
    "StopVerdict": "judge.integrations.stop_gate",
    "render_messages": "judge.integrations.stop_gate",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
