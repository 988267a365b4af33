"""``judge claude-code`` and ``judge claude-code install``: flags, stdin, the answer written out.

Kept import-light: Claude Code starts it for every hook event. Stdin is read here, the
fast path (:mod:`judge.integrations.claude_code.fast_path`) answers calls no hook
matches, ``--resident`` hands the rest to the resident judge
(:mod:`judge.integrations.claude_code.relay`), and only what is left loads the adapter.
``judge claude-code resident FOLDER KEY`` (not listed in the help) is the resident judge
itself, started by a hook process.
"""

from __future__ import annotations

import os
import sys

from judge.integrations.claude_code.fast_path import MAX_STDIN_BYTES

TYPE_CHECKING = False
if TYPE_CHECKING:  # (typing and argparse cost milliseconds on every hook event)
    import argparse
    from typing import Any

REWRITE_CHOICES = ("passthrough", "ask", "allow")
SCOPES = ("project", "local", "user")


def _seconds(value: str) -> float:
    import argparse

    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got {value!r}") from None
    if not 1 <= seconds <= 3600:
        raise argparse.ArgumentTypeError(f"must be between 1 and 3600 seconds, got {value}")
    return seconds


def add_hook_command_options(install: Any, rewrites: tuple[str, ...] = REWRITE_CHOICES) -> None:
    """An installer's options for the hook command it writes (``--timeout``, ``--rewrite``
    among ``rewrites``) and ``--dry-run``: the same for every host's ``install``."""
    install.add_argument(
        "--timeout",
        dest="install_timeout",
        type=_seconds,
        metavar="SECONDS",
        help="judge's own deadline written into the hook command (default: from the config)",
    )
    install.add_argument(
        "--rewrite",
        dest="install_rewrite",
        choices=rewrites,
        help="PreToolUse rewrite mode written into the hook command",
    )
    install.add_argument("--dry-run", action="store_true", help="print the change as a diff, write nothing")


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
    p.add_argument(
        "--resident",
        action="store_true",
        help="hand the event to this user's resident judge, started on first use (the "
        "installer adds this); judged in this process when it cannot be reached; "
        "JUDGE_RESIDENT=0 turns it off",
    )
    p.set_defaults(func=run)
    csub = p.add_subparsers(dest="claude_code_command", parser_class=type(p), metavar="{install}")
    i = csub.add_parser("install", help="register judge in Claude Code's settings.json")
    i.add_argument(
        "--config", dest="install_config", help="judge configuration (default: .claude/judge.yaml)"
    )
    i.add_argument(
        "--scope", choices=SCOPES, default="project", help="which settings file (default: project)"
    )
    add_hook_command_options(i)
    i.add_argument(
        "--force",
        action="store_true",
        help="register a configuration that judge validate finds errors in (refused otherwise)",
    )
    i.add_argument("--uninstall", action="store_true", help="remove judge's hook entries only")
    i.add_argument(
        "--http",
        dest="install_http",
        metavar="URL",
        help="a judge serve URL: events whose hooks fail open become http hooks posting to it "
        "(PreToolUse and fail-closed events keep their command entries)",
    )
    i.add_argument(
        "--no-resident",
        dest="install_resident",
        action="store_false",
        help="hook commands judge every event in their own process (no resident judge)",
    )
    i.set_defaults(func=install)
    r = csub.add_parser("resident")  # started by `judge claude-code --resident`, not by hand
    r.add_argument("folder")
    r.add_argument("key")
    r.set_defaults(func=resident)


def read_stdin() -> bytes | None:
    """The hook input's bytes (one past the size limit at most), or None without stdin."""
    if sys.stdin is None or sys.stdin.isatty():
        return None
    return sys.stdin.buffer.read(MAX_STDIN_BYTES + 1)


def answers_fast(arguments: list[str]) -> tuple[int | None, bytes | None]:
    """``judge claude-code ARGS`` (not ``install``, not ``--help``): read the hook input,
    try the fast path, then (``--resident``) the resident judge. ``(code, _)``: answered
    (written out), exit with ``code``; ``(None, data)``: judge the input read in process."""
    from judge.integrations.claude_code.fast_path import resident_flags, try_fast

    if arguments[:1] in (["install"], ["resident"]) or "-h" in arguments or "--help" in arguments:
        return None, None
    data = read_stdin()
    if try_fast(arguments, data):
        return 0, data
    flags = resident_flags(arguments)
    if flags is not None and data is not None and not _other_host(data):
        from judge.integrations.claude_code.relay import hand_off

        relayed = hand_off(arguments, data, flags.get("--timeout"))
        if relayed is not None:
            return write(relayed), data
    return None, data


def _other_host(data: bytes) -> bool:
    """Whether Copilot CLI or Cursor runs this Claude Code entry (then :func:`run` serves it
    in their dialect, or steps aside: never the resident, which answers as Claude Code)."""
    from judge.integrations.hosts.caller import calling_host

    return calling_host(os.environ, data) is not None


def write(answer: Any) -> int:
    """Write an :class:`~judge.integrations.claude_code.answer.Answer` out; its exit code."""
    for line in answer.stderr:
        print(line, file=sys.stderr)
    if answer.stdout:
        sys.stdout.write(answer.stdout)
        sys.stdout.flush()
    return int(answer.code)


def run(args: argparse.Namespace) -> int:
    """``judge claude-code``: always exits 0 (see :mod:`judge.integrations.claude_code.adapter`)."""
    from judge.integrations.claude_code.adapter import respond
    from judge.integrations.claude_code.failure import hook_text

    data = args.stdin_data if hasattr(args, "stdin_data") else read_stdin()
    from judge.cli.hosts import served_for_claude_code

    served = served_for_claude_code(args, data)  # run by Copilot CLI or Cursor, not Claude Code
    if served is not None:
        return served
    return write(respond(args, hook_text(data)))


def resident(args: argparse.Namespace) -> int:
    """``judge claude-code resident FOLDER KEY``: the resident judge, until it retires."""
    from judge.integrations.claude_code.resident import serve

    return serve(args.folder, args.key)


def install(args: argparse.Namespace) -> int:
    """``judge claude-code install``: 0 done, 1 refused (the reason on stderr)."""
    from pathlib import Path

    from judge.integrations.claude_code.install import install_answer

    return write(install_answer(args, Path.cwd()))
