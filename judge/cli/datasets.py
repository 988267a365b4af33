"""``judge datasets convert llmbar|tau-bench|shadow SOURCE --out DIR [--limit N]``:
a public dataset or a shadow log turned into an eval suite (:mod:`judge.evaluation.datasets.convert`)."""

from __future__ import annotations

import argparse
import sys


def convert_main(args: argparse.Namespace) -> int:
    """0 written; 2 the source cannot be converted or the suite cannot be written."""
    from judge.evaluation.datasets.convert import DatasetError, convert, convert_shadow

    try:
        if args.kind == "shadow":
            event = getattr(args, "event", None) or "Stop"
            suite = convert_shadow(args.source, args.out, getattr(args, "config", None), event, args.limit)
        else:
            suite = convert(args.kind, args.source, args.out, args.limit)
    except DatasetError as exc:
        print(f"judge datasets convert: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"judge datasets convert: cannot write {args.out}: {exc}", file=sys.stderr)
        return 2
    with (suite.parent / "cases.jsonl").open(encoding="utf-8") as cases:
        lines = sum(1 for _ in cases)
    print(f"wrote {suite} ({lines} cases); run it with: judge eval {suite} --out <DIR>")
    return 0
