"""``judge tune``: the command line around :mod:`judge.tuning.tuner`.

Exit codes: 0 when the run completed (whatever it found), 2 when it could not start or
complete (bad flags, an invalid suite or config, no labels, too small a budget, a
missing API key).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from judge.errors import ConfigError, JudgeError, UsageError


def _err(message: str) -> None:
    print(message, file=sys.stderr)


def _check_numbers(args: argparse.Namespace) -> str | None:
    checks = [
        ("--rounds", args.rounds, 0),
        ("--beam", args.beam, 1),
        ("--edits", args.edits, 1),
        ("--concurrency", args.concurrency, 1),
    ]
    if args.max_calls is not None:
        checks.append(("--max-calls", args.max_calls, 1))
    if args.repeats is not None:
        checks.append(("--repeats", args.repeats, 1))
    for flag, value, least in checks:
        if value < least:
            return f"{flag} must be at least {least}, got {value}"
    return None


def tune_main(args: argparse.Namespace) -> int:
    """Run ``judge tune`` (or ``judge tune --compare A B SUITE``); return the exit code."""
    problem = _check_numbers(args)
    if problem:
        _err(problem)
        return 2
    try:
        if args.compare:
            if args.suite:
                _err("--compare A B SUITE takes the suite as its third value; drop the positional SUITE")
                return 2
            return _compare(args)
        if not args.suite:
            _err("usage: judge tune SUITE --hook EVENT:INDEX --out DIR  (or --compare A B SUITE)")
            return 2
        if not args.out:
            _err("--out DIR is required")
            return 2
        return _tune(args)
    except ConfigError as exc:
        for p in exc.problems:
            _err(f"{exc.source}: {p}" if exc.source else p)
        return 2
    except JudgeError as exc:
        problems = getattr(exc, "problems", None)
        for line in problems if isinstance(problems, list) else [str(exc)]:
            _err(str(line))
        return 2
    except ValueError as exc:  # --split and other malformed values
        _err(str(exc))
        return 2
    except OSError as exc:
        _err(f"cannot write the results: {exc}")
        return 2


def _make_out(out: str) -> None:
    try:
        Path(out).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create --out {out}: {exc.strerror or exc}") from None


def _tune(args: argparse.Namespace) -> int:
    from judge.evaluation.suite import load_suite
    from judge.tuning.tuner import TuneOptions, tune

    suite = load_suite(args.suite)
    _make_out(args.out)
    options = TuneOptions(
        out=Path(args.out),
        hook=args.hook,
        rounds=args.rounds,
        beam=args.beam,
        edits=args.edits,
        max_calls=args.max_calls,
        repeats=args.repeats,
        seed=args.seed,
        split=args.split,
        optimizer_model=args.optimizer_model,
        concurrency=args.concurrency,
    )
    log = (lambda _m: None) if args.quiet else _err
    outcome = asyncio.run(tune(suite, options, log=log))
    from judge.tuning.report import headline, unscored_test_reason, warnings

    print(headline(outcome))
    scores = outcome.winner.scores
    print(
        f"winner {outcome.winner.id} (baseline {outcome.baseline.id}); dev {scores.get('dev')}, "
        f"test {scores.get('test')}; {outcome.calls} LLM calls; stopped: {outcome.stopped}"
    )
    why = unscored_test_reason(outcome)
    if why is not None:
        _err(f"judge tune: the test split was not scored: {why}")
    for warning in warnings(outcome):
        _err(f"warning: {warning}")
    for name, path in outcome.files.items():
        print(f"{name}: {path}")
    return 0


def _compare(args: argparse.Namespace) -> int:
    from judge.config import load_config
    from judge.evaluation.suite import load_suite
    from judge.tuning.report import format_comparison, render_compare_report
    from judge.tuning.tuner import compare_configs

    path_a, path_b, suite_path = args.compare
    suite = load_suite(suite_path)
    config_a = load_config(path_a)
    config_b = load_config(path_b)
    if args.out:
        _make_out(args.out)
    names = (path_a, path_b) if path_a != path_b else (f"A:{path_a}", f"B:{path_b}")
    outcome = asyncio.run(
        compare_configs(
            config_a, config_b, suite, names=names, repeats=args.repeats, concurrency=args.concurrency
        )
    )
    print(format_comparison(outcome))
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        data = {
            "suite": outcome.suite,
            "a": outcome.a,
            "b": outcome.b,
            "repeats": outcome.repeats,
            "comparison": outcome.comparison.model_dump(),
            "metrics": {
                k: {m: v for m, v in rep.items() if m != "disagreements"}
                for k, rep in outcome.metrics.items()
            },
        }
        (out / "compare.json").write_text(
            json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        (out / "compare.html").write_text(render_compare_report(outcome), encoding="utf-8")
        print(f"compare.json: {out / 'compare.json'}")
        print(f"compare.html: {out / 'compare.html'}")
    return 0
