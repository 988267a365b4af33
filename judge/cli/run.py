"""``judge run``: evaluate one hook event and print the decision JSON."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from judge.errors import ConfigError, ContextError
from judge.files import MAX_DOCUMENT_BYTES, NestedTooDeeply, load_json, read_text


def _err(msg: str) -> None:
    print(msg, file=sys.stderr)


def add_run_parser(sub: Any) -> None:
    """``judge run --config F --event E [--context F] [--transcript F] [--session S] ...``."""
    p = sub.add_parser("run", help="evaluate one hook event and print the decision JSON")
    p.add_argument("--config", required=True, help="hook configuration (YAML or JSON)")
    p.add_argument("--event", required=True, help="Stop, SubagentStop, PostToolUse, PreToolUse")
    p.add_argument("--context", help="context JSON file (default: stdin)")
    p.add_argument("--transcript", help="transcript file when the context has no execution_summary")
    p.add_argument("--session", help="session id for the Stop rejection count (needs --state)")
    p.add_argument("--state", help="state keeping rejection counts: a SQLite file or postgresql://...")
    p.add_argument("--data-dir", help="write audit_log.jsonl / session_summaries.jsonl here")
    p.set_defaults(func=cmd_run)


def _read_stdin() -> str:
    """The context on stdin, refused beyond the limit of a context file (UTF-8 length)."""
    if sys.stdin is None or sys.stdin.isatty():
        raise ContextError("no context: pass --context FILE or pipe the context JSON on stdin")
    text = sys.stdin.read(MAX_DOCUMENT_BYTES + 1)
    if len(text) > MAX_DOCUMENT_BYTES // 4 and len(text.encode("utf-8", "replace")) > MAX_DOCUMENT_BYTES:
        raise ContextError(f"the context on stdin is larger than {MAX_DOCUMENT_BYTES} bytes")
    return text


def _read_context(path: str | None) -> Any:
    try:
        if path is not None:
            text = read_text(path, "context file")
            source = path
        else:
            text = _read_stdin()
            source = "stdin"
    except UnicodeDecodeError as exc:
        raise ContextError(f"context is not UTF-8 text: {exc}") from None
    except OSError as exc:
        raise ContextError(f"cannot read the context: {exc}") from None
    if not text.strip():
        raise ContextError(f"no context JSON on {source}")
    try:
        return load_json(text)
    except json.JSONDecodeError as exc:
        raise ContextError(
            f"malformed context JSON in {source} at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except NestedTooDeeply:
        raise ContextError(f"the context JSON in {source} is nested too deeply") from None


def _memo_path(args: argparse.Namespace) -> Path | None:
    """Where ``judge run`` keeps what it learned about model servers: ``--data-dir``, else
    beside a SQLite ``--state``; nowhere without either."""
    from judge.llm.providers.features_memo import FILE_NAME

    if args.data_dir:
        return Path(args.data_dir).expanduser() / FILE_NAME
    if args.state and "://" not in args.state:
        return Path(args.state).expanduser().parent / FILE_NAME
    return None


def cmd_run(args: argparse.Namespace) -> int:
    import asyncio
    import sqlite3

    from judge.config import EVENTS, load_config, unknown_event
    from judge.hooks.engine import Engine
    from judge.hooks.gate import Gate
    from judge.llm.providers.features_memo import remembering
    from judge.logs.audit import AuditLog
    from judge.state import open_store

    if args.event not in EVENTS:
        _err(f"judge run: --event: {unknown_event(args.event)}")
        return 1
    if args.session and not args.state:
        _err("--session needs --state DB to keep the rejection count")
        return 1
    from judge.validation import runnable

    try:
        # the checks of judge validate first (errors only: stderr is for the decision's
        # own problems): a misspelt tier would be sent to the provider as a model name, a
        # broken template fail at the first judgement
        config = runnable(load_config(args.config), source=args.config)
        context = _read_context(args.context)
    except ConfigError as exc:
        for problem in exc.problems:
            _err(f"{exc.source}: {problem}" if exc.source else problem)
        return 1
    except (ContextError, OSError) as exc:
        _err(str(exc))
        return 1
    if args.transcript:
        from judge.files import check_readable

        try:
            check_readable(args.transcript, "transcript")
        except FileNotFoundError:
            _err(f"transcript not found: {args.transcript}")
            return 1
        except OSError as exc:
            _err(f"cannot read the transcript: {exc}")
            return 1
    store = None
    try:
        store = open_store(args.state) if args.state else None
        audit = AuditLog(args.data_dir) if args.data_dir else None
        gate = Gate(Engine(config), store=store, audit=audit)
        with remembering(_memo_path(args)):  # what model servers lack, kept between runs
            decision = asyncio.run(
                gate.decide(args.event, context, transcript=args.transcript, session_id=args.session)
            )
    except ContextError as exc:
        _err(str(exc))
        return 1
    except (OSError, sqlite3.Error) as exc:
        _err(f"cannot use the state or data dir: {exc}")
        return 1
    finally:
        if store is not None:
            store.close()
    shadowed = [h for h in decision.hooks if h.calibration is not None and h.calibration.status != "ok"]
    calibration = [
        f"{decision.event} hook {h.level}[{h.index}] ran as shadow: calibration {h.calibration.status}: "
        f"{h.calibration.reason}"
        for h in shadowed
        if h.calibration is not None
    ]
    for line in [*decision.error_lines(), *calibration, *decision.notes]:
        _err(f"judge run: {line}")
    print(json.dumps(decision.to_json(), ensure_ascii=False, indent=2))
    return 0
