"""``judge codex|gemini|copilot|cursor`` and their ``install``: flags, stdin, the answer written out.

Kept import-light, as ``judge claude-code`` is: the host starts a process per hook event.
Stdin is read here, the fast path (:mod:`judge.integrations.hosts.fast_path`) answers
calls no hook matches, and only the rest loads the adapter core.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from judge.cli.claude_code import _seconds, add_hook_command_options, read_stdin, write

#: ``judge <name>`` -> the host's name in help texts.
HOST_TITLES = {"codex": "Codex CLI", "gemini": "Gemini CLI", "copilot": "Copilot CLI", "cursor": "Cursor"}
REWRITE_CHOICES = ("passthrough", "allow")
SCOPES = ("user", "project")


def add_host_parsers(sub: Any) -> None:
    """``judge <host> [--config F] [--timeout S] ...`` and ``judge <host> install`` per host."""
    for name, title in HOST_TITLES.items():
        p = sub.add_parser(name, help=f"run as a {title} command hook (stdin -> stdout)")
        p.add_argument("--config", help="hook configuration (default: $JUDGE_CONFIG)")
        p.add_argument("--state", help="SQLite state file (default: $JUDGE_STATE or a user data dir)")
        p.add_argument("--data-dir", help="audit log folder (default: $JUDGE_DATA_DIR)")
        p.add_argument(
            "--timeout",
            type=_seconds,
            metavar="SECONDS",
            help=f"answer within this many seconds, per the hooks' failMode if they are not done "
            f"(set it below {title}'s hook timeout; the installer does)",
        )
        p.add_argument(
            "--rewrite",
            choices=REWRITE_CHOICES,
            help="a PreToolUse rewrite: passthrough (default) applies it where the host keeps its "
            "own approval, else denies the call saying what the policy would run; allow also "
            "where it skips the host's approval (Codex)",
        )
        if name == "copilot":
            p.add_argument(
                "--event",
                help="the Copilot event (agentStop, preToolUse, ...) of a native camelCase entry, "
                "whose input does not name it",
            )
        p.set_defaults(func=run, host=name)
        hsub = p.add_subparsers(dest=f"{name}_command", parser_class=type(p))
        i = hsub.add_parser("install", help=f"register judge in {title}'s hooks file")
        i.add_argument("--config", dest="install_config", help="judge configuration (default: judge.yaml)")
        i.add_argument("--scope", choices=SCOPES, default="user", help="user (default) or project hooks file")
        add_hook_command_options(i, REWRITE_CHOICES)
        i.add_argument("--uninstall", action="store_true", help="remove judge's hook entries only")
        i.set_defaults(func=install, host=name)


def answers_fast(name: str, arguments: list[str]) -> tuple[bool, bytes | None]:
    """``judge <host> ARGS`` (not ``install``, not ``--help``): read the hook input and try
    the fast path. ``(True, _)``: answered, nothing to print; else the input read."""
    from judge.integrations.hosts.fast_path import try_fast

    if arguments[:1] == ["install"] or "-h" in arguments or "--help" in arguments:
        return False, None
    data = read_stdin()
    return try_fast(name, arguments, data), data


def run(args: argparse.Namespace) -> int:
    """``judge <host>``: always exits 0 (see :mod:`judge.integrations.hosts.core`)."""
    from judge.integrations.hosts.core import respond
    from judge.integrations.hosts.fast_path import dialect_for

    data = args.stdin_data if hasattr(args, "stdin_data") else read_stdin()
    return write(respond(dialect_for(args.host), args, hook_text(data)))


def hook_text(data: bytes | None) -> Any:
    """The hook input from stdin's bytes, or why there is none."""
    from judge.integrations.claude_code.fast_path import MAX_STDIN_BYTES
    from judge.integrations.hosts.dialect import HostInputError

    if data is None:
        return HostInputError("no hook input: the host passes the hook JSON on stdin")
    if len(data) > MAX_STDIN_BYTES:
        return HostInputError(f"hook input larger than {MAX_STDIN_BYTES} bytes")
    return data.decode("utf-8", errors="replace")


def install(args: argparse.Namespace) -> int:
    """``judge <host> install``: 0 done, 1 refused (the reason on stderr)."""
    from pathlib import Path

    from judge.integrations.hosts.fast_path import dialect_for
    from judge.integrations.hosts.install import install_answer

    return write(install_answer(dialect_for(args.host), args, Path.cwd()))


def served_for_claude_code(args: argparse.Namespace, data: bytes | None) -> int | None:
    """``judge claude-code`` run by Copilot CLI or Cursor (which read Claude Code's settings):
    the exit code once served - by that host's dialect, or by stepping aside for judge's
    own registration there (:mod:`judge.integrations.hosts.foreign`); None: Claude Code."""
    from pathlib import Path

    from judge.integrations.hosts.foreign import calling_host, native_registration

    host = calling_host(os.environ, data)
    if host is None:
        return None
    title = HOST_TITLES[host]
    registered = native_registration(host, os.environ, Path.cwd())
    if registered is not None:
        write_note(f"run by {title} from Claude Code's settings; judge {host} in {registered} serves it")
        return 0
    from judge.integrations.hosts.core import respond
    from judge.integrations.hosts.fast_path import dialect_for

    served = argparse.Namespace(**vars(args))
    served.rewrite = "allow" if getattr(args, "rewrite", None) == "allow" else None
    served.event = None
    answer = respond(dialect_for(host), served, hook_text(data))
    answer.stderr.insert(0, f"judge claude-code: run by {title}; answered as judge {host}")
    return write(answer)


def write_note(line: str) -> None:
    import sys

    print(f"judge claude-code: {line}", file=sys.stderr)
