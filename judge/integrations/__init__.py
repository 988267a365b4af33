"""Integrations: the Claude Code hook adapter and helpers for hand-written agent loops.

* :func:`wrap_dispatcher` — PreToolUse/PostToolUse hooks around an agent's ``call_tool``;
* :class:`HookContext` — the frozen, trusted session facts security decisions rest on;
* :class:`StopGate` — the Stop gate for an agent loop (continue with a reason, or stop).

The Claude Code adapter (``judge claude-code``) lives in :mod:`judge.integrations.claude_code`
and is imported lazily by the CLI.
"""

from __future__ import annotations

from judge.integrations.dispatcher import HookContext, blocked_result, wrap_dispatcher
from judge.integrations.stop_gate import StopGate, StopVerdict, render_messages

__all__ = ["HookContext", "StopGate", "StopVerdict", "blocked_result", "render_messages", "wrap_dispatcher"]
