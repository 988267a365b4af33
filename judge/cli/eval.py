"""``judge eval SUITE --out DIR ...``.

Exit codes: 0 the run completed (whatever the judge said); 1 a ``--fail-under`` or
``--fail-over`` bound was violated (or cannot be evaluated, e.g. recall without labelled
block cases); 2 the run could not complete: a bad suite or flag, missing files, an
interrupted run (Ctrl-C: the finished results stay in ``DIR/results.jsonl``;
``--resume`` continues), or every judgement errored (nothing was judged).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from judge.evaluation.batch import BatchOutcome, add_batch_section, batch_settings_problem, run_batch
from judge.evaluation.batch_state import summary_lines as batch_summary
from judge.evaluation.bounds import UsageProblem, check_bounds, parse_bounds
from judge.evaluation.cache import CACHE_NAME as CACHE_NAME
from judge.evaluation.cache import JudgementCache
from judge.evaluation.cascade_report import cascade_summary
from judge.evaluation.interrupts import InterruptGuard, ignore_interrupts
from judge.evaluation.junit import write_junit
from judge.evaluation.metrics import compute_metrics, rounded
from judge.evaluation.progress import make_progress
from judge.evaluation.report_html import write_html
from judge.evaluation.runner import (
    DEFAULT_CONCURRENCY,
    CaseResult,
    ResultsWriter,
    order_results,
    pairs,
    read_results,
    recorded_result,
    repair_results,
    run_suite,
)
from judge.evaluation.suite import Suite, SuiteError
from judge.evaluation.variants import VariantProblem, load_variant_suite, plan_variants
from judge.evaluation.workers import WorkerFailure, choose_workers, run_in_workers
from judge.hooks.judging import PromptJudge
from judge.llm.providers.features_memo import FILE_NAME as MEMO_FILE
from judge.llm.providers.features_memo import remembering
from judge.logs.jsonl import now_iso


def _err(message: str) -> None:
    print(message, file=sys.stderr)


def write_reports(suite: Suite, results: list[CaseResult], out: Path) -> dict[str, Any]:
    """Compute the metrics from ``results`` (in suite order) and write the three report
    files; returns the exact (unrounded) metrics."""
    metrics = compute_metrics(results, name=suite.name, event=suite.event)
    report = rounded(metrics)
    _atomic_write(out / "report.json", json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    write_junit(results, out / "junit.xml", suite.name)
    write_html(report, results, suite.cases, suite.base_dir, out / "report.html")
    return metrics


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8", errors="backslashreplace")  # a lone surrogate: its JSON escape
    os.replace(tmp, path)


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
    if "flipRate" in report:
        lines.append(f"  flip rate {_num(report['flipRate'])}")
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


def all_errored(report: dict[str, Any]) -> str | None:
    """The message for a run in which every judgement errored (None otherwise)."""
    n = int(report["n"])
    if not n or report["errors"] != n:
        return None
    groups = report.get("errorGroups") or []
    top = f"; most common: {groups[0]['message']}" if groups else ""
    return f"judge eval: every judgement errored ({n} of {n}): the run measured nothing{top}"


def write_run_info(
    out: Path,
    started_at: str,
    judging_seconds: float,
    judgements: int,
    concurrency: int,
    resumed: bool,
    workers: int = 1,
) -> dict[str, Any]:
    """Write ``DIR/run.json``: how this run went (timing is not part of report.json, which
    must be identical for a resumed and an uninterrupted run)."""
    run = {
        "startedAt": started_at,
        "judgements": judgements,
        "judgingSeconds": round(judging_seconds, 3),
        "judgementsPerSecond": round(judgements / judging_seconds, 2) if judging_seconds > 0 else 0.0,
        "concurrency": concurrency,
        "workers": workers,
        "resumed": bool(resumed),
    }
    (out / "run.json").write_text(json.dumps(run, indent=2) + "\n", encoding="utf-8")
    return run


def _num(value: Any) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def eval_main(args: argparse.Namespace, judge: PromptJudge | None = None) -> int:  # noqa: C901
    """Run ``judge eval``; ``judge`` overrides the LLM judge (tests, embedding)."""
    try:
        bounds = parse_bounds(list(getattr(args, "fail_under", None) or []), "under")
        bounds += parse_bounds(list(getattr(args, "fail_over", None) or []), "over")
        concurrency = args.concurrency if args.concurrency is not None else DEFAULT_CONCURRENCY
        if concurrency < 1:
            raise UsageProblem(f"--concurrency must be at least 1, got {concurrency}")
        if args.repeats is not None and not 1 <= args.repeats <= 100:
            raise UsageProblem(f"--repeats must be between 1 and 100, got {args.repeats}")
        variants = plan_variants(getattr(args, "model", None), getattr(args, "config", None))
    except (UsageProblem, VariantProblem) as exc:
        _err(f"judge eval: {exc}")
        return 2
    if len(variants) > 1:
        from judge.cli.compare import compare_main  # side by side: DIR/<variant>/...

        return compare_main(args, variants, eval_main, judge)
    try:
        suite = load_variant_suite(args.suite, variants[0])
    except SuiteError as exc:
        _err(f"judge eval: cannot load suite {args.suite}:")
        for problem in exc.problems:
            _err(f"  {problem}")
        return 2
    repeats = args.repeats if args.repeats is not None else suite.repeats
    recorded = bool(getattr(args, "recorded", False))
    batch = bool(getattr(args, "batch", False))
    if batch and (recorded or getattr(args, "workers", None) is not None):
        _err(f"judge eval: --batch cannot be combined with {'--recorded' if recorded else '--workers'}")
        return 2
    batch_problem = batch_settings_problem() if batch else None
    if batch_problem is not None:
        _err(f"judge eval: {batch_problem}")
        return 2
    if recorded:
        missing_verdicts = [case.id for case in suite.cases if case.recorded is None]
        if missing_verdicts:
            _err(
                f"judge eval: --recorded: {len(missing_verdicts)} case(s) have no recorded verdict "
                f"(first: {missing_verdicts[0]!r}); convert a shadow log with `judge datasets convert shadow`"
            )
            return 2
        repeats = 1  # a recorded verdict is one sample
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _err(f"judge eval: cannot create {out}: {exc}")
        return 2
    results_path = out / "results.jsonl"
    try:  # checked before anything is paid for: a folder, a file that cannot be written
        if results_path.exists() and not results_path.is_file():
            raise IsADirectoryError(f"{results_path} is not a regular file")
        with results_path.open("ab"):
            pass
    except OSError as exc:
        _err(f"judge eval: cannot write {results_path}: {exc}")
        return 2
    skip: set[tuple[str, int]] = set()
    if args.resume:
        repair_results(results_path)
        skip = {(r.id, r.repeat) for r in order_results(read_results(results_path), suite.cases, repeats)}
    quiet = bool(getattr(args, "quiet", False))
    if args.resume and not quiet:
        _err(f"resuming: {len(skip)} of {len(suite.cases) * repeats} results already in {results_path}")
    cache_path: Path | None = None
    if not args.no_cache:
        cache_path = Path(args.cache) if getattr(args, "cache", None) else out.resolve().parent / CACHE_NAME
        try:
            JudgementCache(cache_path).close()  # created and checked before any work
        except Exception as exc:  # sqlite3 errors, permissions
            _err(f"judge eval: cannot open the cache {cache_path}: {exc}")
            return 2
    jobs_left = len(suite.cases) * repeats - len(skip)
    requested = getattr(args, "workers", None)
    if requested is not None and requested < 1:
        _err(f"judge eval: --workers must be at least 1, got {requested}")
        return 2
    # A judge object handed in by an embedding program runs in this process unless asked.
    workers = choose_workers(
        requested if requested is not None or judge is None else 1, jobs_left, concurrency
    )
    progress = make_progress(quiet=quiet)
    interrupted = False
    failure: str | None = None
    started_at = now_iso()
    started = time.perf_counter()
    writers: list[ResultsWriter] = []
    batched: BatchOutcome | None = None

    def open_writer() -> None:
        writers.append(ResultsWriter(results_path, truncate=not args.resume))

    # what model servers lack (learned by the first requests) is kept beside the cache
    memo = cache_path.parent / MEMO_FILE if cache_path is not None else None
    with remembering(memo):
        if recorded:
            open_writer()
            for case in suite.cases:
                if (case.id, 0) not in skip:
                    writers[0].write(recorded_result(case))
            writers[0].close()
            judging_seconds = time.perf_counter() - started
        elif batch:
            open_writer()
            try:
                batched = run_batch(
                    suite,
                    out=out,
                    repeats=repeats,
                    concurrency=concurrency,
                    skip=skip,
                    cache_path=cache_path,
                    judge=judge,
                    resume=bool(args.resume),
                    on_result=writers[0].write,
                    progress=progress,
                    quiet=quiet,
                )
                interrupted, failure = batched.interrupted, batched.failure
            finally:
                judging_seconds = time.perf_counter() - started
                writers[0].close()
        elif workers > 1:
            try:
                run_in_workers(
                    suite,
                    workers=workers,
                    repeats=repeats,
                    concurrency=concurrency,
                    skip=skip,
                    cache_path=cache_path,
                    judge=judge,
                    before_results=open_writer,
                    on_result=lambda result: writers[0].write(result),
                    progress=progress,
                )
            except KeyboardInterrupt:
                interrupted = True
                ignore_interrupts()  # a second Ctrl-C must not cut the results short
            except WorkerFailure as exc:
                failure = str(exc)
            finally:
                judging_seconds = time.perf_counter() - started
                for writer in writers:
                    writer.close()
        else:
            open_writer()
            try:
                completed = run_suite(
                    suite,
                    repeats=repeats,
                    concurrency=concurrency,
                    judge=judge,
                    cache_path=cache_path,
                    on_result=writers[0].write,
                    skip=skip,
                    progress=progress,
                    guard=InterruptGuard(),
                )
                interrupted = not completed
            except KeyboardInterrupt:
                interrupted = True
            finally:
                judging_seconds = time.perf_counter() - started
                writers[0].close()
    write_error = next((w.error for w in writers if w.error is not None), None)
    if write_error is not None:
        _err(f"judge eval: writing {results_path} failed: {write_error}")
        return 2
    results = order_results(read_results(results_path), suite.cases, repeats)
    if failure is not None:
        _err(
            f"judge eval: {failure}; {len(results)} of {len(suite.cases) * repeats} results are kept in "
            f"{results_path}; run the same command with --resume to finish"
        )
        return 2
    if batched is not None and (interrupted or failure is not None):
        _err(
            "  the submitted batches are saved in " + str(out / "batch.json") + "; --resume polls them again"
        )
    if interrupted:
        _err(
            f"interrupted: {len(results)} of {len(suite.cases) * repeats} results are kept in "
            f"{results_path}; run the same command with --resume to finish"
        )
        return 2
    missing = len(pairs(suite.cases, repeats)) - len(results)
    if missing:
        _err(f"judge eval: {missing} result(s) missing from {results_path}; run again with --resume")
        return 2
    metrics = write_reports(suite, results, out)
    report = rounded(metrics)
    if batched is not None:
        report["batch"] = add_batch_section(out, batched)
    run = write_run_info(
        out, started_at, judging_seconds, len(results) - len(skip), concurrency, args.resume, workers
    )
    if not quiet:
        print(_summary(report, out))
        if batched is not None:
            print("\n".join(batch_summary(report["batch"])))
        print(
            f"  judged {run['judgements']} in {run['judgingSeconds']:.2f} s "
            f"({run['judgementsPerSecond']:.1f}/s at concurrency {concurrency}"
            + (f" in {workers} worker processes)" if workers > 1 else ")")
        )
    nothing_judged = all_errored(report)
    if nothing_judged is not None:
        _err(nothing_judged)
        if quiet:  # the summary (with the error kinds) was not printed
            for line in error_summary(report):
                _err(line)
        return 2
    failed = check_bounds(metrics, bounds)
    for message in failed:
        _err(f"FAIL {message}")
    return 1 if failed else 0
