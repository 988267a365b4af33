"""The ``judge`` command line. Only this module (and the server) read stdin, print and exit.

Subcommands that need heavier modules (the service, evals, tuning) import them lazily so
``judge run`` and ``judge claude-code`` start fast. Importing this module costs only the
standard library's ``os``, ``sys`` and ``codecs``: a Claude Code hook event
(:func:`judge.cli.claude_code.answers_fast`) is answered before ``argparse`` and the
subcommands' modules are loaded.
"""

from __future__ import annotations

import codecs
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # (typing and argparse cost milliseconds on every hook event)
    import argparse
    from collections.abc import Callable, Sequence
    from typing import Any, NoReturn

    Handler = Callable[[argparse.Namespace], int]


#: The commands an agent host runs per hook event, the input on stdin (judge.cli.hosts has
#: the other hosts' titles).
HOOK_COMMANDS = ("claude-code", "codex", "gemini", "copilot", "cursor")


def _parser_class() -> type[argparse.ArgumentParser]:
    """argparse with a configurable exit code for usage errors (``error_exit``), and help
    that shows the defaults (:class:`~judge.cli.help.HelpFormatter`)."""
    import argparse

    from judge.cli.help import HelpFormatter

    class _Parser(argparse.ArgumentParser):
        error_exit = 1

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.setdefault("formatter_class", HelpFormatter)
            super().__init__(*args, **kwargs)

        def error(self, message: str) -> NoReturn:
            self.print_usage(sys.stderr)
            self.exit(self.error_exit, f"{self.prog}: error: {message}\n")

    return _Parser


def _err(msg: str) -> None:
    print(msg, file=sys.stderr)


# ---------------------------------------------------------------------------
# judge validate / judge config schema / judge init


def cmd_validate(args: argparse.Namespace) -> int:
    from judge.cli.validate import validate_main

    return validate_main(args)


def cmd_config_schema(args: argparse.Namespace) -> int:
    import json

    from judge.config import config_json_schema

    try:
        print(json.dumps(config_json_schema(), indent=2), flush=True)
    except BrokenPipeError:
        raise
    except OSError as exc:  # a full disk, /dev/full
        _err(f"judge config schema: cannot write the schema: {exc.strerror or exc}")
        return 1
    return 0


def cmd_init(args: argparse.Namespace) -> int:
    from judge.cli.init import init_main

    return init_main(args)


# ---------------------------------------------------------------------------
# Lazily imported subcommands (owned by their modules)


def cmd_serve(args: argparse.Namespace) -> int:
    from judge.cli.serve import serve_main

    return serve_main(args)


def cmd_claude_code(args: argparse.Namespace) -> int:
    from judge.cli.claude_code import run

    return run(args)


def cmd_claude_code_install(args: argparse.Namespace) -> int:
    from judge.cli.claude_code import install

    return install(args)


def cmd_eval(args: argparse.Namespace) -> int:
    from judge.cli.eval import eval_main

    return eval_main(args)


def cmd_tune(args: argparse.Namespace) -> int:
    from judge.cli.tune import tune_main

    return tune_main(args)


def cmd_datasets_convert(args: argparse.Namespace) -> int:
    from judge.cli.datasets import convert_main

    return convert_main(args)


# ---------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    from judge import __version__
    from judge.cli.claude_code import add_claude_code_parser
    from judge.cli.help import add_exit_codes
    from judge.cli.hosts import add_host_parsers
    from judge.cli.logs import add_logs_parser
    from judge.cli.model_flag import ModelFlag
    from judge.cli.report_view import add_view_flags
    from judge.cli.run import add_run_parser
    from judge.cli.serve import add_serve_parser
    from judge.cli.tune import add_money_flags, add_tune_parser
    from judge.cli.validate import add_validate_parser

    _Parser = _parser_class()
    parser = _Parser(
        prog="judge",
        description="An LLM-as-judge quality gate for AI agents.",
        epilog="`judge COMMAND --help` shows a command's options with their defaults, and its exit codes.",
    )
    parser.add_argument("--version", action="version", version=f"judge {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("init", help="write a starter config and a labelled smoke suite")
    p.add_argument("dir", nargs="?", default=".", help="folder to write into (default: .)")
    p.add_argument("--force", action="store_true", help="overwrite existing files")
    p.set_defaults(func=cmd_init)

    add_validate_parser(sub, cmd_validate)

    p = sub.add_parser("config", help="configuration helpers")
    csub = p.add_subparsers(dest="config_command", required=True, parser_class=_Parser)
    s = csub.add_parser("schema", help="print the JSON Schema of the configuration")
    s.set_defaults(func=cmd_config_schema)

    add_run_parser(sub)

    add_serve_parser(sub, cmd_serve)

    add_claude_code_parser(sub, cmd_claude_code, cmd_claude_code_install)
    add_host_parsers(sub)
    add_logs_parser(sub)

    p = sub.add_parser("eval", help="run an eval suite over recorded responses")
    p.add_argument("suite", help="suite YAML file")
    p.add_argument("--out", required=True, help="output folder for results and reports")
    p.add_argument("--concurrency", type=int, default=None, help="parallel judgements (default: 16)")
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="worker processes sharing the judgements (default: the available CPUs, "
        "at least 50 judgements each)",
    )
    p.add_argument(
        "--repeats", type=int, default=None, help="judge each case K times (default: the suite's repeats)"
    )
    p.add_argument("--resume", action="store_true", help="keep results.jsonl; run what is missing")
    p.add_argument("--no-cache", action="store_true", help="bypass the judgement cache")
    p.add_argument(
        "--recorded",
        action="store_true",
        help="score the cases' recorded verdicts (from a shadow log) against their labels; judge nothing",
    )
    p.add_argument(
        "--fail-under",
        action="append",
        default=[],
        metavar="METRIC=VALUE",
        help="exit 1 when METRIC is below VALUE (repeatable), e.g. recall=0.8",
    )
    p.add_argument(
        "--fail-over",
        action="append",
        default=[],
        metavar="METRIC=VALUE",
        help="exit 1 when METRIC is above VALUE (repeatable), e.g. errorRate=0.05",
    )
    p.add_argument("--cache", help="cache database (default: DIR/../.judge-cache.sqlite)")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.add_argument(
        "--model",
        action=ModelFlag,
        help="judge every prompt hook with this tier or model; repeat it to compare models side by side",
    )
    p.add_argument(
        "--config",
        action="append",
        metavar="CONFIG",
        help="judge with this hooks config instead of the suite's; repeat it to compare configs side by side",
    )
    p.add_argument(
        "--batch",
        action="store_true",
        help="judge through the providers' batch APIs (cheaper, hours of latency, no tools)",
    )
    add_view_flags(p)
    p.add_argument(
        "--probes",
        metavar="NAMES",
        help="re-judge every case perturbed by each probe and count the flips: padding, claims, "
        "injection, format, the suite's own (comma-separated), or all",
    )
    p.add_argument(
        "--calibration",
        metavar="FILE",
        help="with --recorded: also report the block rate corrected for the judge's error "
        "measured in FILE (a calibration.json)",
    )
    add_money_flags(p, "run")
    p.set_defaults(func=cmd_eval)
    p.error_exit = 2  # type: ignore[attr-defined]

    add_tune_parser(sub, cmd_tune)

    p = sub.add_parser("datasets", help="dataset helpers")
    dsub = p.add_subparsers(dest="datasets_command", required=True, parser_class=_Parser)
    s = dsub.add_parser("convert", help="convert a public dataset into an eval suite")
    s.add_argument("kind", choices=["llmbar", "tau-bench", "shadow"], help="dataset kind")
    s.add_argument("source", help="dataset file (for shadow: DATA_DIR/shadow_log.jsonl of judge serve)")
    s.add_argument("--config", help="shadow: the hooks config the suite judges with (copied into it)")
    s.add_argument("--event", default="Stop", help="shadow: which event's records to convert (default Stop)")
    s.add_argument("--out", required=True, help="output folder for the suite")
    s.add_argument("--limit", type=int, default=None, help="convert at most N items")
    s.set_defaults(func=cmd_datasets_convert)
    add_exit_codes(sub)
    return parser


def _escape_others(error: UnicodeError) -> tuple[bytes, int]:
    """surrogateescape, and the JSON-style escape for any other lone surrogate."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    out = bytearray()
    for char in error.object[error.start : error.end]:
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:  # surrogateescape's own: the original byte
            out.append(code - 0xDC00)
        else:  # as backslashreplace writes it
            out += (
                f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
            ).encode()
    return bytes(out), error.end


_ESCAPE_OTHERS = "judge.surrogateescape-or-backslash"
codecs.register_error(_ESCAPE_OTHERS, _escape_others)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    # A lone surrogate (an agent's bytes decoded with surrogateescape, a JSON "\ud800") in
    # a reason or a record is printed as the escape it is in JSON, never a crash that would
    # turn a block into Claude Code's non-blocking error.
    # (A C/POSIX locale's surrogateescape keeps writing undecodable bytes as they were.)
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        errors = getattr(stream, "errors", None)
        if reconfigure is not None and errors in ("strict", "surrogateescape"):
            reconfigure(errors="backslashreplace" if errors == "strict" else _ESCAPE_OTHERS)
    stdin_data: bytes | None = None
    read_stdin = bool(arguments) and arguments[0] in HOOK_COMMANDS
    if read_stdin:
        # A host starts a process per tool call: answer "nothing to do" without loading
        # the configuration or the engine when no hook can match, and (Claude Code) hand
        # the rest to the resident judge (--resident) when it can be reached.
        if arguments[0] == "claude-code":
            from judge.cli.claude_code import answers_fast

            answered, stdin_data = answers_fast(arguments[1:])
            if answered is not None:
                return answered
        else:
            from judge.cli.hosts import answers_fast as host_answers_fast

            done, stdin_data = host_answers_fast(arguments[0], arguments[1:])
            if done:
                return 0
    parser = build_parser()
    if not arguments:  # `judge` alone: the help, with argparse's usage-error status
        parser.print_help(sys.stderr)
        return 2
    args = parser.parse_args(arguments)
    if read_stdin and stdin_data is not None:
        args.stdin_data = stdin_data
    handler: Handler = args.func
    try:
        return handler(args)
    except KeyboardInterrupt:
        _err("interrupted")
        return 130
    except BrokenPipeError:
        # The reader went away (e.g. `judge run ... | head`): not an error of ours.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


def entry() -> None:  # pragma: no cover - console script shim
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
