"""``judge eval SUITE --out DIR --model A --model B [--config C ...]``: variants side by side.

Each variant (:mod:`judge.evaluation.variants`) is an ordinary ``judge eval`` run into
``DIR/<slug>/`` (results.jsonl, report.json, junit.xml, report.html, run.json: the same
files, cache and ``--resume`` as a single run); then ``DIR/comparison.json``
(:mod:`judge.evaluation.comparison`) and ``DIR/comparison.html`` are written and the
table is printed.

Exit codes: 2 when a variant could not complete (the comparison stops there; ``--resume``
continues) or when every judgement of some variant errored (the comparison is still
written); 1 when a ``--fail-under`` / ``--fail-over`` bound is violated by any variant
(each bound applies to each variant); else 0.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from judge.evaluation.bounds import check_bounds, parse_bounds
from judge.evaluation.cache import CACHE_NAME
from judge.evaluation.compare_html import write_comparison_html
from judge.evaluation.comparison import build_comparison
from judge.evaluation.metrics import compute_metrics, rounded
from judge.evaluation.runner import CaseResult, order_results, pairs, read_results
from judge.evaluation.suite import Suite, SuiteError
from judge.evaluation.variants import Variant, load_variant_suite
from judge.hooks.judging import PromptJudge


def _err(message: str) -> None:
    print(message, file=sys.stderr)


def _load_all(suite_path: str, variants: list[Variant]) -> list[Suite] | None:
    """Every variant's suite, before anything is judged (None after printing the problems)."""
    suites = []
    for variant in variants:
        try:
            suites.append(load_variant_suite(suite_path, variant))
        except SuiteError as exc:
            _err(f"judge eval: cannot load suite {suite_path} for variant {variant.name}:")
            for problem in exc.problems:
                _err(f"  {problem}")
            return None
    return suites


def _variant_args(args: argparse.Namespace, variant: Variant, out: Path) -> argparse.Namespace:
    """The flags of the ordinary run of one variant (bounds are checked per variant here)."""
    sub = argparse.Namespace(**vars(args))
    sub.out = str(out / variant.slug)
    sub.model = [variant.model] if variant.model else None
    sub.config = [variant.config] if variant.config else None
    sub.fail_under, sub.fail_over = [], []
    if not args.no_cache and not getattr(args, "cache", None):
        sub.cache = str(out.resolve().parent / CACHE_NAME)  # shared with single runs next to DIR
    return sub


#: One ordinary ``judge eval`` run: ``eval_main(args, judge) -> exit code``.
RunVariant = Callable[[argparse.Namespace, PromptJudge | None], int]


def compare_main(
    args: argparse.Namespace,
    variants: list[Variant],
    run_variant: RunVariant,
    judge: PromptJudge | None = None,
) -> int:
    """Run every variant with ``run_variant`` and compare them (exit codes: module docstring)."""
    if getattr(args, "recorded", False):
        _err(
            "judge eval: --recorded scores the recorded verdicts; it cannot be combined with several variants"
        )
        return 2
    bounds = parse_bounds(list(args.fail_under or []), "under") + parse_bounds(
        list(args.fail_over or []), "over"
    )
    suites = _load_all(args.suite, variants)
    if suites is None:
        return 2
    out = Path(args.out)
    quiet = bool(getattr(args, "quiet", False))
    results: list[list[CaseResult]] = []
    metrics: list[dict[str, Any]] = []
    all_errored: list[str] = []
    for number, (variant, suite) in enumerate(zip(variants, suites, strict=True), start=1):
        folder = out / variant.slug
        if not quiet:
            print(f"== variant {number}/{len(variants)}: {variant.name} -> {folder}", flush=True)
        code = run_variant(_variant_args(args, variant, out), judge)
        repeats = args.repeats if args.repeats is not None else suite.repeats
        done = order_results(read_results(folder / "results.jsonl"), suite.cases, repeats)
        if len(done) < len(pairs(suite.cases, repeats)):
            if code != 2:  # not expected: an ordinary run that ended says why when it is incomplete
                _err(f"judge eval: variant {variant.name} left results missing in {folder}")
            _err(
                f"judge eval: the comparison stopped at variant {variant.name}; {number - 1} of "
                f"{len(variants)} variant(s) are complete; run the same command with --resume to finish"
            )
            return 2
        if code == 2:
            all_errored.append(variant.name)
        results.append(done)
        metrics.append(compute_metrics(done, name=f"{suite.name} [{variant.name}]", event=suite.event))
    suite = suites[0]
    comparison = build_comparison(
        suite.name,
        suite.cases,
        args.repeats if args.repeats is not None else suite.repeats,
        variants,
        metrics,
        results,
    )
    report = rounded(comparison)
    (out / "comparison.json").write_text(
        json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    write_comparison_html(report, suite.cases, out / "comparison.html")
    if not quiet:
        print(comparison_table(report, out))
    if all_errored:
        _err(
            f"judge eval: every judgement of {', '.join(all_errored)} errored: "
            "the comparison measured nothing there"
        )
        return 2
    failed = [
        f"FAIL [{variant.name}] {message}"
        for variant, exact in zip(variants, metrics, strict=True)
        for message in check_bounds(exact, bounds)
    ]
    for line in failed:
        _err(line)
    return 1 if failed else 0


def _num(value: Any, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _ci(row: dict[str, Any], key: str) -> str:
    interval = row["ci95"].get(key)
    value = _num(row.get(key))
    return value if not interval else f"{value} [{interval[0]:.2f}, {interval[1]:.2f}]"


def comparison_table(report: dict[str, Any], out: Path) -> str:
    """The comparison as plain text: the variant table, the pairwise tests, the files."""
    header = [
        "variant",
        "accuracy [95% CI]",
        "kappa",
        "F1",
        "precision",
        "recall",
        "errors",
        "p50 ms",
        "p95 ms",
        "tokens in/out",
        "cost $",
    ]
    rows = [header]
    for v in report["variants"]:
        rows.append(
            [
                v["name"],
                _ci(v, "accuracy"),
                _num(v["cohenKappa"]),
                _num(v["f1"]),
                _ci(v, "precision"),
                _ci(v, "recall"),
                f"{v['errors']}/{v['n']}",
                _num(v["latencyMs"]["p50"], 0),
                _num(v["latencyMs"]["p95"], 0),
                f"{v['tokens']['inputTokens']}/{v['tokens']['outputTokens']}",
                _num(v["costUsd"], 4),
            ]
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = [
        f"comparison of {len(report['variants'])} variants on {report['name']} "
        f"({report['cases']} cases, {report['labelled']} labelled)"
    ]
    lines += [
        "  " + "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]
    if report["mcnemarOmitted"]:
        lines.append(f"  McNemar tests omitted: {report['mcnemarOmitted']}")
    for p in report["pairs"]:
        test = p["mcnemar"]
        agreement = f"agree on {p['agreed']} of {p['decided']} cases both decided"
        if test is None:
            detail = f"no test: {p['mcnemarOmitted']}" if not report["mcnemarOmitted"] else ""
        else:
            detail = (
                f"only A right {test['aOnlyCorrect']}, only B right {test['bOnlyCorrect']}, "
                f"p = {test['pValue']:.4g} (mid-p {test['midPValue']:.4g}, Holm {test['pValueHolm']:.4g})"
            )
        lines.append(f"  {p['a']} (A) vs {p['b']} (B): {agreement}" + (f"; {detail}" if detail else ""))
    lines.append(f"  {len(report['disagreements'])} case(s) decided differently")
    lines.append(f"  comparison: {out / 'comparison.html'}, {out / 'comparison.json'}")
    return "\n".join(lines)
