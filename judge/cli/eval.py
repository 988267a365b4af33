"""``judge eval SUITE --out DIR ...``: flags in, the run (:func:`judge.evaluation.run.run_eval`
or a comparison, :func:`judge.evaluation.compare.run_comparison`), the summary and the exit code out.

Exit codes: 0 the run completed (whatever the judge said); 1 a ``--fail-under`` or
``--fail-over`` bound was violated (or cannot be evaluated, e.g. recall without labelled
block cases); 2 the run could not complete: a bad suite or flag, missing files, an
interrupted run (Ctrl-C: the finished results stay in ``DIR/results.jsonl``;
``--resume`` continues), a run stopped at its ``--max-usd`` (the same), or every judgement
errored (nothing was judged). ``--estimate`` prints what the run would cost and exits 0
without calling any model.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from judge.cli.progress import make_progress
from judge.cli.report_view import (
    DEFAULT_SHOWN,
    disagreement_lines,
    open_report,
    outcome_document,
    print_json,
)
from judge.cli.trust_summary import trust_summary
from judge.errors import UsageError
from judge.evaluation.batch.state import summary_lines as batch_summary
from judge.evaluation.bounds import parse_bounds
from judge.evaluation.reports.cascade import cascade_summary
from judge.evaluation.run import EvalOutcome, EvalSettings, run_eval
from judge.evaluation.runner import DEFAULT_CONCURRENCY
from judge.evaluation.variants import Variant, plan_variants
from judge.hooks.judging import PromptJudge


def _err(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _summary(report: dict[str, Any], out: Path) -> str:
    lines = [
        f"{report['name']}: {report['n']} judgements, {report['errors']} error(s), "
        f"allow rate {_num(report.get('allowRate'))}, "
        f"served from cache {report['cachedResults']}/{report['n']}"
    ]
    if report["n"] and report["cachedResults"] == report["n"]:
        lines[0] += " (no provider calls)"
    if report.get("costUsd"):
        lines[0] += f", cost ${report['costUsd']:.4f}"
    lines += error_summary(report)
    if "confusion" in report:
        ci = report["ci95"]
        parts = []
        for key in ("accuracy", "precision", "recall", "f1", "cohenKappa"):
            interval = ci.get(key)
            extra = f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else ""
            parts.append(f"{key} {_num(report.get(key))}{extra}")
        lines.append("  " + ", ".join(parts))
    lines += cascade_summary(report)
    if report.get("outcomes"):
        shown = ", ".join(f"{name} {n}" for name, n in report["outcomes"].items())
        lines.append(f"  stop outcomes: {shown} (impossible rate {_num(report.get('impossibleRate'))})")
    if "flipRate" in report:
        lines.append(f"  flip rate {_num(report['flipRate'])}")
    lines += trust_summary(report, out)
    lat = report["latencyMs"]
    lines.append(f"  latency p50 {_num(lat['p50'])} ms, p90 {_num(lat['p90'])} ms, p99 {_num(lat['p99'])} ms")
    lines.append(f"  reports: {out / 'report.html'}, {out / 'report.json'}, {out / 'junit.xml'}")
    return "\n".join(lines)


#: Error groups listed in the summary (report.html and report.json list them all).
SUMMARY_ERROR_GROUPS = 5


def error_summary(report: dict[str, Any]) -> list[str]:
    """The summary's lines about errors: each kind with its count, most frequent first."""
    groups = report.get("errorGroups") or []
    lines = [f"  {g['count']} x {g['message']}" for g in groups[:SUMMARY_ERROR_GROUPS]]
    if len(groups) > SUMMARY_ERROR_GROUPS:
        rest = sum(g["count"] for g in groups[SUMMARY_ERROR_GROUPS:])
        lines.append(
            f"  ... and {rest} more in {len(groups) - SUMMARY_ERROR_GROUPS} other kind(s) (see report.html)"
        )
    return lines


def _num(value: Any) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def settings_from(
    args: argparse.Namespace, judge: PromptJudge | None = None
) -> tuple[EvalSettings, list[Variant]]:
    """The run's settings and variants from ``judge eval``'s flags (UsageError for bad ones)."""
    bounds = parse_bounds(list(getattr(args, "fail_under", None) or []), "under")
    bounds += parse_bounds(list(getattr(args, "fail_over", None) or []), "over")
    concurrency = args.concurrency if args.concurrency is not None else DEFAULT_CONCURRENCY
    if concurrency < 1:
        raise UsageError(f"--concurrency must be at least 1, got {concurrency}")
    if args.repeats is not None and not 1 <= args.repeats <= 100:
        raise UsageError(f"--repeats must be between 1 and 100, got {args.repeats}")
    variants = plan_variants(getattr(args, "model", None), getattr(args, "config", None))
    cache = getattr(args, "cache", None)
    quiet = bool(getattr(args, "quiet", False) or getattr(args, "json", False))  # --json: stdout is the JSON
    calibration = getattr(args, "calibration", None)
    settings = EvalSettings(
        suite=args.suite,
        out=Path(args.out),
        variant=variants[0],
        concurrency=concurrency,
        repeats=args.repeats,
        workers=getattr(args, "workers", None),
        resume=bool(args.resume),
        no_cache=bool(args.no_cache),
        cache=Path(cache) if cache else None,
        recorded=bool(getattr(args, "recorded", False)),
        batch=bool(getattr(args, "batch", False)),
        quiet=quiet,
        bounds=bounds,
        probes=getattr(args, "probes", None),
        calibration=Path(calibration) if calibration else None,
        max_usd=getattr(args, "max_usd", None),
        judge=judge,
        note=_err,
        progress=lambda: make_progress(quiet=quiet),
    )
    return settings, variants


def print_outcome(outcome: EvalOutcome, settings: EvalSettings, show: int = 0) -> int:
    """Print a single run's outcome (with the first ``show`` disagreements); its exit code."""
    for line in outcome.problems:
        _err(line)
    if outcome.problems or outcome.report is None or outcome.run is None:
        return 2
    report, run = outcome.report, outcome.run
    if not settings.quiet:
        print(_summary(report, settings.out))
        for line in disagreement_lines(report, show, settings.out):
            print(line)
        if "batch" in report:
            print("\n".join(batch_summary(report["batch"])))
        print(
            f"  judged {run['judgements']} in {run['judgingSeconds']:.2f} s "
            f"({run['judgementsPerSecond']:.1f}/s at concurrency {outcome.concurrency}"
            + (f" in {outcome.workers} worker processes)" if outcome.workers > 1 else ")")
        )
    if outcome.nothing_judged is not None:
        _err(outcome.nothing_judged)
        if settings.quiet:  # the summary (with the error kinds) was not printed
            for line in error_summary(report):
                _err(line)
        return 2
    for message in outcome.failed:
        _err(f"FAIL {message}")
    return 1 if outcome.failed else 0


def estimate_main(settings: EvalSettings, variants: list[Variant]) -> int:
    """``judge eval --estimate``: what the run would cost; no model is called, nothing written."""
    from judge.errors import SuiteError
    from judge.evaluation.estimate import describe, estimate_eval

    try:
        estimates = estimate_eval(settings, variants)
    except SuiteError as exc:
        _err(f"judge eval: cannot load suite {settings.suite}:")
        for problem in exc.problems:
            _err(f"  {problem}")
        return 2
    for estimate in estimates:
        print("\n".join(describe(estimate)))
    if settings.max_usd is not None:
        print(f"the run stops before its spending could pass --max-usd {settings.max_usd:g}")
    if len(estimates) > 1 and all(e.usd is not None for e in estimates):
        print(f"total: ~${sum(e.usd or 0.0 for e in estimates):.4f}")
    return 0


def eval_main(args: argparse.Namespace, judge: PromptJudge | None = None) -> int:
    """``judge eval``; ``judge`` overrides the LLM judge (tests, embedding)."""
    as_json = bool(getattr(args, "json", False))
    try:
        settings, variants = settings_from(args, judge)
    except UsageError as exc:
        if as_json:
            print_json({"exitCode": 2, "problems": [f"judge eval: {exc}"]})
        _err(f"judge eval: {exc}")
        return 2
    if getattr(args, "estimate", False):
        return estimate_main(settings, variants)
    if len(variants) > 1:
        from judge.cli.compare import compare_main  # side by side: DIR/<variant>/...

        return compare_main(settings, variants, as_json=as_json)
    outcome = run_eval(settings)
    shown = getattr(args, "disagreements", None)
    code = print_outcome(outcome, settings, DEFAULT_SHOWN if shown is None else shown)
    if as_json:
        print_json(outcome_document(outcome, settings.out, code))
    if getattr(args, "open", False) and outcome.report is not None:
        open_report(settings.out / "report.html")
    return code
