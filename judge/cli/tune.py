"""``judge tune``: the command line around :mod:`judge.tuning.tuner` (and its parser, with the
money flags it shares with ``judge eval``).

Exit codes: 0 when the run completed (whatever it found), and for ``--estimate`` (which
calls no model); 2 when it could not start or complete (bad flags, an invalid suite or
config, no labels, too small a budget, a missing API key).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from judge.errors import ConfigError, JudgeError, UsageError


def _err(message: str) -> None:
    print(message, file=sys.stderr)


def add_money_flags(parser: argparse.ArgumentParser, what: str) -> None:
    """``--estimate`` and ``--max-usd`` (``judge eval`` and ``judge tune``)."""
    parser.add_argument(
        "--estimate",
        action="store_true",
        help=f"print the model calls, tokens and dollars the {what} would cost; call no model",
    )
    parser.add_argument(
        "--max-usd",
        type=float,
        default=None,
        metavar="USD",
        help="stop before a model request could take the spending past USD (needs a price for every model)",
    )


def add_tune_parser(sub: Any, handler: Callable[[argparse.Namespace], int]) -> None:
    p = sub.add_parser("tune", help="tune a prompt hook against a labelled suite")
    p.add_argument("suite", nargs="?", help="labelled suite YAML file")
    p.add_argument(
        "--hook", help="the hook to tune, EVENT:INDEX (e.g. Stop:0); default: the only prompt hook"
    )
    p.add_argument("--out", help="output folder (candidates.jsonl, best.yaml, report.html)")
    p.add_argument("--rounds", type=int, default=3, help="optimizer rounds (default 3)")
    p.add_argument(
        "--beam", type=int, default=3, help="parents per round, drawn from the Pareto frontier (default 3)"
    )
    p.add_argument("--edits", type=int, default=3, help="edited prompts asked for per parent (default 3)")
    p.add_argument(
        "--demos", type=int, default=4, help="train cases per few-shot demos edit (default 4; 0: none)"
    )
    p.add_argument(
        "--search",
        choices=["pareto", "beam"],
        default="pareto",
        help="parents from the per-item Pareto frontier with merges (default), or the best by dev",
    )
    p.add_argument("--merges", type=int, default=None, help="most merges (default: one per round; 0: none)")
    p.add_argument(
        "--objective",
        choices=["balanced", "pairwise", "precision"],
        default="balanced",
        help="balanced accuracy (default), pair accuracy of paired cases, or block recall at a "
        "precision floor",
    )
    p.add_argument(
        "--min-block-precision", type=float, default=None, metavar="P", help="a floor on block precision"
    )
    p.add_argument(
        "--min-allow-precision", type=float, default=None, metavar="P", help="a floor on allow precision"
    )
    p.add_argument(
        "--optimizer-template",
        metavar="FILE",
        help="a domain policy for the optimizer, or a reflection template with $PROMPT and $EXAMPLES",
    )
    p.add_argument(
        "--max-calls", type=int, default=None, help="budget of LLM calls, judge and optimizer (default: none)"
    )
    add_money_flags(p, "tuning run")
    p.add_argument(
        "--repeats", type=int, default=None, help="judgements per item and prompt (default: suite's)"
    )
    p.add_argument("--seed", type=int, default=0, help="split and sampling seed (default 0)")
    p.add_argument("--split", default="20/40/40", help="train/dev/test percentages (default 20/40/40)")
    p.add_argument(
        "--optimizer-model", default="Reasoning", help="tier or model of the optimizer (default Reasoning)"
    )
    p.add_argument("--concurrency", type=int, default=8, help="parallel judgements (default 8)")
    p.add_argument("--cache", help="judgement cache (default: DIR/../.judge-cache.sqlite, as judge eval)")
    p.add_argument("--no-cache", action="store_true", help="judge every candidate afresh")
    p.add_argument(
        "--compare", nargs=3, metavar=("A", "B", "SUITE"), help="compare two hook configs on a suite's items"
    )
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.set_defaults(func=handler)
    p.error_exit = 2  # argparse's usage errors exit 2, like every other failure of the command


def _check_numbers(args: argparse.Namespace) -> str | None:
    checks = [
        ("--rounds", args.rounds, 0),
        ("--beam", args.beam, 1),
        ("--edits", args.edits, 1),
        ("--demos", args.demos, 0),
        ("--concurrency", args.concurrency, 1),
    ]
    if args.merges is not None:
        checks.append(("--merges", args.merges, 0))
    if args.max_usd is not None and not args.max_usd > 0:
        return f"--max-usd must be above 0, got {args.max_usd:g}"
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
        if args.estimate:
            return _estimate(args)
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


def _options(args: argparse.Namespace) -> Any:
    from judge.evaluation.cache import CACHE_NAME
    from judge.tuning.plan import TuneOptions

    out = Path(args.out or ".")
    cache = None if args.no_cache else Path(args.cache) if args.cache else out.resolve().parent / CACHE_NAME
    return TuneOptions(
        out=out,
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
        objective=args.objective,
        min_block_precision=args.min_block_precision,
        min_allow_precision=args.min_allow_precision,
        optimizer_template=Path(args.optimizer_template) if args.optimizer_template else None,
        max_usd=args.max_usd,
        demos=args.demos,
        search=args.search,
        merges=args.merges,
        cache=cache,
    )


def _estimate(args: argparse.Namespace) -> int:
    import asyncio

    from judge.evaluation.suite import load_suite
    from judge.tuning.estimate import describe_tune, estimate_tune

    estimate = asyncio.run(estimate_tune(load_suite(args.suite), _options(args)))
    print("\n".join(describe_tune(estimate)))
    return 0


def _tune(args: argparse.Namespace) -> int:
    import asyncio

    from judge.evaluation.suite import load_suite
    from judge.tuning.tuner import tune

    suite = load_suite(args.suite)
    _make_out(args.out)
    options = _options(args)
    log = (lambda _m: None) if args.quiet else _err
    outcome = asyncio.run(tune(suite, options, log=log))
    from judge.tuning.report import headline, unscored_test_reason, warnings

    print(headline(outcome))
    scores = outcome.winner.scores
    spent = (
        "" if outcome.spent_usd is None else f"; ${outcome.spent_usd:.4f} of --max-usd {outcome.max_usd:g}"
    )
    stopped = outcome.stopped + (f" ({outcome.limit})" if outcome.limit else "")
    print(
        f"winner {outcome.winner.id} (baseline {outcome.baseline.id}); dev {scores.get('dev')}, "
        f"test {scores.get('test')}; {outcome.calls} LLM calls{spent}; stopped: {stopped}"
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
    import asyncio

    from judge.config import load_config
    from judge.evaluation.suite import load_suite
    from judge.tuning.compare import compare_configs
    from judge.tuning.report import format_comparison, render_compare_report

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
