"""``judge logs KIND``: a log of the service as JSONL on stdout, from the state database
(``--state postgresql://...``) or from the files of a data dir (``--data-dir``).

The records are the same in both places, so what this prints can be read like the files:
``judge logs shadow --state URL > shadow_log.jsonl`` then ``judge datasets convert shadow
shadow_log.jsonl``. ``--after ID`` prints only what came after the last record seen (the
row id in the database, the record's position in a file); the last id is reported on
stderr so a follow-up export can continue from it. From a database, ``--after`` (``0`` to
start a series) shows only rows no later commit can precede: those from the first one
written in the last minute on wait for the next export.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from judge.logs.table import KINDS, iter_log, kind_of, session_of

#: Files of a data dir per log, oldest first (the decision log keeps one rotated file).
_FILES = {"decisions": ("decisions.jsonl.1", "decisions.jsonl")}


def add_logs_parser(sub: Any) -> None:
    p = sub.add_parser("logs", help="print a service log (audit, sessions, shadow, decisions) as JSONL")
    p.add_argument("kind", help="audit, sessions, shadow or decisions (or the file stem, e.g. audit_log)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--state", help="read the state database's logs (postgresql://...)")
    where.add_argument("--data-dir", help="read the JSONL files of this data dir (default: ./data)")
    p.add_argument("--session", help="only this session's records")
    p.add_argument(
        "--after",
        type=int,
        default=None,
        metavar="ID",
        help="only the records after this id (from a database: those no later commit can precede)",
    )
    p.add_argument("--limit", type=int, default=None, metavar="N", help="at most N records")
    p.set_defaults(func=logs_main)


class _Unreadable(Exception):
    """A log file of the data dir cannot be read (a FIFO, a device, no permission...)."""


def _from_files(data_dir: Path, kind: str) -> Iterator[tuple[int, dict[str, Any]]]:
    from judge.files import RefusedFile
    from judge.logs.jsonl import read_jsonl

    position = 0
    if kind == "decisions":  # numbers that survive a rotation dropping ``.1``
        from judge.logs.decisions import records_before

        position = records_before(data_dir)
    for name in _FILES.get(kind, (f"{kind}.jsonl",)):
        path = data_dir / name
        try:
            for record in read_jsonl(path):
                position += 1
                yield position, record
        except OSError as exc:  # from reading only: stdout is written outside this generator
            raise _Unreadable(
                str(exc) if isinstance(exc, RefusedFile) else f"cannot read {path}: {exc}"
            ) from None


def _say(message: str) -> None:
    print(f"judge logs: {message}", file=sys.stderr)


def logs_main(args: argparse.Namespace) -> int:
    """Print the records; 0, or 1 with one line on stderr for a bad flag or source."""
    from judge.errors import StateUnavailable
    from judge.redact import visible_controls

    try:
        kind = kind_of(args.kind)
    except ValueError as exc:
        _say(str(exc))
        return 1
    incremental = args.after is not None  # an export that continues where one ended
    after = args.after or 0
    if args.session is not None:  # (as the gate stored it)
        from judge.files import storable_text

        args.session = storable_text(args.session)
    if after < 0 or (args.limit is not None and args.limit < 0):
        _say("--after and --limit must not be negative")
        return 1
    store = None
    try:
        if args.state:
            from judge.logs.table_postgres import PostgresLogTable
            from judge.state import is_database_url, open_store
            from judge.state.postgres import PostgresStore

            if not is_database_url(args.state):
                _say("--state must be a postgresql://... URL (for the logs in files: --data-dir)")
                return 1
            store = open_store(args.state)
            assert isinstance(store, PostgresStore)
            table = PostgresLogTable(store)
            source = table.describe()
            rows = iter_log(table, kind, after=after, session=args.session, settled=incremental)
        else:
            data_dir = Path(args.data_dir or "data")
            if not data_dir.is_dir():
                _say(f"--data-dir {data_dir}: not a directory")
                return 1
            source = str(data_dir)
            rows = (
                (i, r)
                for i, r in _from_files(data_dir, kind)
                if i > after and (args.session is None or session_of(r) == args.session)
            )
        count, last = 0, after
        for row_id, record in rows:
            if args.limit is not None and count >= args.limit:
                break
            # (bidirectional controls as JSON escapes: a terminal shows them, not obeys them)
            sys.stdout.write(visible_controls(json.dumps(record, ensure_ascii=False)) + "\n")
            count, last = count + 1, row_id
        sys.stdout.flush()
    except (StateUnavailable, _Unreadable) as exc:
        _say(str(exc))
        return 1
    finally:
        if store is not None:
            store.close()
    _say(f"{count} record(s) of {kind} ({KINDS[kind]}) from {source}; last id {last}")
    return 0
