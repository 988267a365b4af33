"""How ``--help`` reads: every option with its default, every command with its exit codes.

:class:`HelpFormatter` appends ``(default: X)`` to an option whose help does not say its
default already (flags that are off and options without a default say nothing), and keeps
the line breaks of an epilog; :func:`add_exit_codes` gives each command the epilog of
:data:`EXIT_CODES` (a command that states its own keeps it).
"""

from __future__ import annotations

import argparse
import textwrap
from typing import Any

#: What each command's exit status means (the contract's wording, shortened).
EXIT_CODES: dict[str, str] = {
    "init": "0 written, 1 a file exists (use --force) or cannot be written",
    "validate": "0 valid (warnings are printed), 1 errors (or warnings with --strict)",
    "config": "0 printed, 1 it could not be written",
    "run": "0 a decision was reached (allow or block: read it on stdout), 1 bad flags or input, "
    "or a configuration with errors (nothing judged)",
    "serve": "0 after a graceful stop (SIGTERM, Ctrl-C), 1 it cannot start (bad flags or "
    "configuration, an open host without a token, a state database or port it cannot use)",
    "claude-code": "0 always (Claude Code reads the answer on stdout: a block is "
    '{"decision": "block"} there, a PreToolUse denial its permissionDecision); install: 0 done, '
    "1 refused (the reason on stderr, the settings untouched)",
    "logs": "0 printed, 1 bad flags or a log that cannot be read",
    "eval": "0 the run completed (whatever the judge said), 1 a --fail-under/--fail-over bound "
    "is violated, 2 the run could not complete (bad suite, configuration or flag, interrupted) "
    "or every judgement errored",
    "tune": "0 the run completed (whatever it found), 2 it could not start or complete (bad "
    "flags, suite or configuration, no labels, too small a budget, a missing API key)",
    "datasets": "0 converted, 2 the dataset cannot be read or converted",
}


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Defaults shown where the help does not give them; epilogs keep their lines."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if action.help is None and default not in (None, False, argparse.SUPPRESS):
            return "(default: %(default)s)"
        if (
            "default" in text.lower()
            or default is None
            or default is False
            or default == []
            or default is argparse.SUPPRESS
            or action.option_strings == []
        ):
            return action.help
        return f"{text} (default: %(default)s)"


def add_exit_codes(sub: Any) -> None:
    """The exit codes of :data:`EXIT_CODES` as the epilog of each command of ``sub``."""
    for name, parser in sub.choices.items():
        if name in EXIT_CODES and not parser.epilog:
            parser.epilog = textwrap.fill(f"exit codes: {EXIT_CODES[name]}", 78)
