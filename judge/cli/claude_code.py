"""The ``judge claude-code`` command line (kept import-light: it runs on every tool call)."""

from __future__ import annotations

import argparse
from typing import Any

REWRITE_CHOICES = ("passthrough", "ask", "allow")
SCOPES = ("project", "local", "user")


def _seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got {value!r}") from None
    if not 1 <= seconds <= 3600:
        raise argparse.ArgumentTypeError(f"must be between 1 and 3600 seconds, got {value}")
    return seconds


def add_claude_code_parser(sub: Any, run: Any, install: Any) -> None:
    """``judge claude-code [--config F] [--timeout S] ...`` and ``judge claude-code install``."""
    p = sub.add_parser("claude-code", help="run as a Claude Code command hook (stdin -> stdout)")
    p.add_argument("--config", help="hook configuration (default: $JUDGE_CONFIG)")
    p.add_argument("--state", help="SQLite state file (default: $JUDGE_STATE or a user data dir)")
    p.add_argument("--data-dir", help="audit log folder (default: $JUDGE_DATA_DIR)")
    p.add_argument(
        "--timeout",
        type=_seconds,
        metavar="SECONDS",
        help="answer within this many seconds, per the hooks' failMode if they are not done "
        "(set it below Claude Code's hook timeout; the installer does)",
    )
    p.add_argument(
        "--rewrite",
        choices=REWRITE_CHOICES,
        help="how a PreToolUse rewrite reaches Claude Code: passthrough (default: Claude Code's "
        "permission flow decides), ask (always confirm), allow (skip the permission prompt); "
        "default $JUDGE_CLAUDE_CODE_REWRITE or passthrough",
    )
    p.add_argument(
        "--pinned",
        action="store_true",
        help="sessions are pinned at SessionStart (the installer adds this): a judged call "
        "that finds no pinned configuration for its session says so",
    )
    p.set_defaults(func=run)
    csub = p.add_subparsers(dest="claude_code_command", parser_class=type(p))
    i = csub.add_parser("install", help="register judge in Claude Code's settings.json")
    i.add_argument(
        "--config", dest="install_config", help="judge configuration (default: .claude/judge.yaml)"
    )
    i.add_argument(
        "--scope", choices=SCOPES, default="project", help="which settings file (default: project)"
    )
    i.add_argument(
        "--timeout",
        dest="install_timeout",
        type=_seconds,
        metavar="SECONDS",
        help="judge's own deadline written into the hook command (default: from the config)",
    )
    i.add_argument(
        "--rewrite",
        dest="install_rewrite",
        choices=REWRITE_CHOICES,
        help="PreToolUse rewrite mode written into the hook command",
    )
    i.add_argument("--dry-run", action="store_true", help="print the change as a diff, write nothing")
    i.add_argument("--uninstall", action="store_true", help="remove judge's hook entries only")
    i.set_defaults(func=install)
